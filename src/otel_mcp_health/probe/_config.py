"""Reading the probe's configuration file: ``[probe]``, ``[module.NAME]`` and ``[[target]]``.

The loader conventions of the outcome policy: every problem names the table and the key, never
the key's value (a URL, a command line or a header may be private); one problem refuses the whole
file; unknown keys are refused. Credentials are accepted only by reference (``{env = "NAME"}`` or
``{file = "PATH"}``): a header or environment value written inline is refused, and so is a URL
carrying ``user:password@`` or a query string. See docs/probe.md.
"""

from __future__ import annotations

import re
import tomllib
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from otel_mcp_health._files import READ_ERRORS, ReadFailure, say_read_failure
from otel_mcp_health.core import toml_fields
from otel_mcp_health.core.toml_fields import FieldError, RefusedFileError

DEFAULT_LISTEN: Final = "127.0.0.1:9469"
DEFAULT_MIN_INTERVAL_S: Final = 15.0
DEFAULT_MAX_CONCURRENT: Final = 4
DEFAULT_INTERVAL_S: Final = 60.0
DEFAULT_TIMEOUT_S: Final = 10.0
DEFAULT_MAX_PAGES: Final = 100
TRANSPORTS: Final = ("streamable_http", "sse", "stdio")
ERAS: Final = ("auto", "legacy", "modern")
VERIFY: Final = ("not_required", "policy")
#: How a configuration file that cannot be read is spoken of (a missing one in the OS's words).
_CONFIG_FILE_WORDS: Final = {
    ReadFailure.NOT_TEXT: "not UTF-8 text",
    ReadFailure.UNREADABLE: "cannot read ({os})",
}
_NAME: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_HEADER: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


class ProbeConfigError(RefusedFileError[str]):
    """A configuration that is refused: its source and every problem found (never a value)."""


@dataclass(frozen=True, slots=True)
class Secret:
    """A credential by reference: read when a probe needs it, never kept in the configuration."""

    env: str | None = None
    file: str | None = field(default=None, repr=False)
    prefix: str = field(default="", repr=False)


@dataclass(frozen=True, slots=True)
class Canary:
    """The optional read-only call after discovery."""

    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict, repr=False)
    verify: str = "not_required"


@dataclass(frozen=True, slots=True)
class Module:
    """How to probe: handshake era, bounds, and whether the canary runs."""

    name: str
    era: str = "auto"
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_pages: int = DEFAULT_MAX_PAGES
    call: bool = True


@dataclass(frozen=True, slots=True)
class ProbeTarget:
    """What to probe: one configured MCP server (the only thing ``/probe`` accepts)."""

    name: str
    transport: str
    module: str
    interval_s: float
    url: str | None = field(default=None, repr=False)
    command: tuple[str, ...] = field(default=(), repr=False)
    headers: Mapping[str, Secret] = field(default_factory=dict, repr=False)
    env: Mapping[str, Secret] = field(default_factory=dict, repr=False)
    canary: Canary | None = None


@dataclass(frozen=True, slots=True)
class ProbeConfig:
    """A validated configuration file."""

    source: str
    listen: str = DEFAULT_LISTEN
    min_interval_s: float = DEFAULT_MIN_INTERVAL_S
    max_concurrent: int = DEFAULT_MAX_CONCURRENT
    pins: str | None = field(default=None, repr=False)
    outcomes: str | None = field(default=None, repr=False)
    modules: Mapping[str, Module] = field(default_factory=dict)
    targets: Mapping[str, ProbeTarget] = field(default_factory=dict)


def _name(value: Any) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise FieldError("expects a name of 1 to 64 letters, digits, '_', '.' or '-'")
    return value


def _listen(value: Any) -> str:
    host, sep, port = toml_fields.text(value).rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise FieldError("expects HOST:PORT")
    return str(value)


def _url(value: Any) -> str:
    try:
        parts = urllib.parse.urlsplit(toml_fields.text(value))
        _ = parts.port
    except ValueError:
        raise FieldError("expects an http:// or https:// URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FieldError("expects an http:// or https:// URL")
    if parts.username is not None or parts.password is not None:
        raise FieldError(
            "holds credentials (user:password@): give them in [target.headers] by reference"
        )
    if parts.query or parts.fragment:
        raise FieldError(
            "has a query or fragment: give credentials in [target.headers] by reference"
        )
    return str(value)


def _command(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise FieldError("expects a non-empty list of strings (the server's argv)")
    return tuple(value)


def _secret(value: Any) -> Secret:
    if not isinstance(value, dict):
        raise FieldError('is a credential written inline: write {env = "NAME"} or {file = "PATH"}')
    unknown = set(value) - {"env", "file", "prefix"}
    if unknown or ("env" in value) == ("file" in value):
        raise FieldError("expects exactly one of env or file, and optionally prefix")
    prefix = value.get("prefix", "")
    if not isinstance(prefix, str) or "\n" in prefix or "\r" in prefix:
        raise FieldError("prefix expects a single-line string")
    if "env" in value:
        if not isinstance(value["env"], str) or not _ENV_NAME.fullmatch(value["env"]):
            raise FieldError("env expects an environment variable name")
        return Secret(env=value["env"], prefix=prefix)
    return Secret(file=toml_fields.text(value["file"]), prefix=prefix)


def _references(pattern: re.Pattern[str]) -> Callable[[Any], dict[str, Secret]]:
    def check(value: Any) -> dict[str, Secret]:
        if not isinstance(value, dict):
            raise FieldError("expects a table of NAME = {env = ...} or {file = ...}")
        out: dict[str, Secret] = {}
        for key, item in value.items():
            if not pattern.fullmatch(key):
                raise FieldError("holds a name that is not a valid header or variable name")
            try:
                out[key] = _secret(item)
            except FieldError as exc:
                raise FieldError(f"entry {key if _NAME.fullmatch(key) else '?'}: {exc}") from None
        return out

    return check


def _canary(value: Any) -> Canary:
    if not isinstance(value, dict):
        raise FieldError("expects a table with tool, arguments and verify")
    unknown = set(value) - {"tool", "arguments", "verify"}
    if unknown:
        raise FieldError("holds an unknown key (tool, arguments, verify)")
    arguments = value.get("arguments", {})
    if not isinstance(arguments, dict):
        raise FieldError("arguments expects an inline table")
    return Canary(
        toml_fields.text(value.get("tool")),
        arguments,
        toml_fields.choice(VERIFY)(value.get("verify", "not_required")),
    )


_PROBE_KEYS: Final[dict[str, Callable[[Any], Any]]] = {
    "listen": _listen,
    "min_interval": toml_fields.positive_seconds,
    "max_concurrent": toml_fields.positive_count,
    "interval": toml_fields.positive_seconds,
    "pins": toml_fields.text,
    "outcomes": toml_fields.text,
}
_MODULE_KEYS: Final[dict[str, Callable[[Any], Any]]] = {
    "era": toml_fields.choice(ERAS),
    "timeout": toml_fields.positive_seconds,
    "max_pages": toml_fields.positive_count,
    "call": toml_fields.flag,
}
_TARGET_KEYS: Final[dict[str, Callable[[Any], Any]]] = {
    "name": _name,
    "transport": toml_fields.choice(TRANSPORTS),
    "url": _url,
    "command": _command,
    "module": _name,
    "interval": toml_fields.positive_seconds,
    "headers": _references(_HEADER),
    "env": _references(_ENV_NAME),
    "canary": _canary,
}


def _values(
    where: str, table: Any, keys: Mapping[str, Callable[[Any], Any]], problems: list[str]
) -> dict[str, Any]:
    """The validated values of one table; each problem names ``where`` and the key."""
    if not isinstance(table, dict):
        problems.append(f"{where}: expects a table")
        return {}
    values: dict[str, Any] = {}
    for key, raw in table.items():
        shown = key if _NAME.fullmatch(key) else "<not a plain name>"
        check = keys.get(key)
        if check is None:
            problems.append(f"{where}, key {shown!r}: unknown key")
            continue
        try:
            values[key] = check(raw)
        except FieldError as exc:
            problems.append(f"{where}, key {shown!r}: {exc}")
    return values


def _target(
    index: int, table: Any, modules: Mapping[str, Module], interval: float, problems: list[str]
) -> ProbeTarget | None:
    where = f"target {index}"
    before = len(problems)
    values = _values(where, table, _TARGET_KEYS, problems)
    for key in ("name", "transport"):
        if key not in values and not any(f"key {key!r}" in p for p in problems[before:]):
            problems.append(f"{where}, key {key!r}: is required")
    transport = values.get("transport")
    needs = "command" if transport == "stdio" else "url"
    other = "url" if transport == "stdio" else "command"
    if transport is not None and needs not in values:
        problems.append(f"{where}, key {needs!r}: is required with transport {transport}")
    if transport is not None and other in values:
        problems.append(f"{where}, key {other!r}: does not apply to transport {transport}")
    if "env" in values and transport != "stdio":
        problems.append(f"{where}, key 'env': applies to transport stdio only")
    if "headers" in values and transport == "stdio":
        problems.append(f"{where}, key 'headers': does not apply to transport stdio")
    module = values.get("module", next(iter(modules), None))
    if module is not None and module not in modules:
        problems.append(f"{where}, key 'module': names no [module.NAME] table")
    if len(problems) > before or module is None:
        return None
    return ProbeTarget(
        name=values["name"],
        transport=values["transport"],
        module=module,
        interval_s=values.get("interval", interval),
        url=values.get("url"),
        command=values.get("command", ()),
        headers=values.get("headers", {}),
        env=values.get("env", {}),
        canary=values.get("canary"),
    )


def _modules(document: Mapping[str, Any], problems: list[str]) -> dict[str, Module]:
    tables = document.get("module")
    if not isinstance(tables, dict) or not tables:
        problems.append("key 'module': expects at least one [module.NAME] table")
        return {}
    modules: dict[str, Module] = {}
    for name, table in tables.items():
        if not _NAME.fullmatch(name):
            problems.append("module <not a plain name>: expects a name of letters, digits, _.-")
            continue
        values = _values(f"module {name}", table, _MODULE_KEYS, problems)
        modules[name] = Module(
            name,
            era=values.get("era", "auto"),
            timeout_s=values.get("timeout", DEFAULT_TIMEOUT_S),
            max_pages=values.get("max_pages", DEFAULT_MAX_PAGES),
            call=values.get("call", True),
        )
    return modules


def parse_config(document: Mapping[str, Any], source: str) -> ProbeConfig:
    """A validated configuration from a parsed TOML document (:class:`ProbeConfigError`)."""
    problems = [
        f"key {key!r}: unknown key ([probe], [module.NAME] and [[target]] only)"
        if _NAME.fullmatch(key)
        else "unknown key ([probe], [module.NAME] and [[target]] only)"
        for key in document
        if key not in ("probe", "module", "target")
    ]
    probe = _values("[probe]", document.get("probe", {}), _PROBE_KEYS, problems)
    modules = _modules(document, problems)
    tables = document.get("target")
    if not isinstance(tables, list) or not tables:
        problems.append("key 'target': expects at least one [[target]] table")
        tables = []
    targets: dict[str, ProbeTarget] = {}
    interval = probe.get("interval", DEFAULT_INTERVAL_S)
    for index, table in enumerate(tables, start=1):
        target = _target(index, table, modules, interval, problems)
        if target is not None and target.name in targets:
            problems.append(f"target {index}, key 'name': repeats an earlier target's name")
        elif target is not None:
            targets[target.name] = target
    if problems:
        raise ProbeConfigError(source, problems)
    return ProbeConfig(
        source=source,
        listen=probe.get("listen", DEFAULT_LISTEN),
        min_interval_s=probe.get("min_interval", DEFAULT_MIN_INTERVAL_S),
        max_concurrent=probe.get("max_concurrent", DEFAULT_MAX_CONCURRENT),
        pins=probe.get("pins"),
        outcomes=probe.get("outcomes"),
        modules=modules,
        targets=targets,
    )


def load_config(path: str | Path) -> ProbeConfig:
    """Read and validate a configuration file (:class:`ProbeConfigError` names every problem)."""
    source = str(path)
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except READ_ERRORS as exc:
        raise ProbeConfigError(source, [say_read_failure(exc, _CONFIG_FILE_WORDS)]) from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        position = toml_fields.syntax_position(exc)
        raise ProbeConfigError(
            source, ["not valid TOML" + (f" {position}" if position else "")]
        ) from None
    return parse_config(document, source)
