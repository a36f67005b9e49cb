"""What ``otel-mcp-health check`` was asked to do, validated before anything connects.

Every problem found here is a usage error (exit code 2) with a message that names the option and
what it expects; a credential given with ``--header`` never appears in such a message.
"""

from __future__ import annotations

import glob
import json
import os
import re
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TextIO

from otel_mcp_health import OutcomePolicy, OutcomePolicyError

#: Default bound of the whole check (handshake, discovery, watch and call), in seconds.
DEFAULT_TIMEOUT_S: Final = 30.0
#: Default page cap of one discovery (``--max-pages``): a server that keeps handing out new cursors
#: is cut off. Deliberately a tenth of :data:`otel_mcp_health.core.traversal.DEFAULT_MAX_PAGES`
#: (the passive traversal cap): the check sends every page request itself, inside one
#: ``--timeout`` budget, and stopping well below the processor's cap means the processor sees
#: the whole chain the check walked (documented in docs/configuration.md).
CHECK_MAX_PAGES: Final = 100
#: ``Client`` modes by ``--era``: ``auto`` probes ``server/discover`` and falls back to
#: ``initialize``.
ERA_MODES: Final = {"auto": "auto", "legacy": "legacy", "modern": "2026-07-28"}
#: The modules of the MCP SDK a command that runs the client needs (the optional
#: ``[instruments]`` extra brings them).
MCP_CLIENT_MODULES: Final = frozenset({"mcp", "mcp_types", "anyio", "httpx2"})
_HEADER_NAME: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # RFC 9110 token

Era = Literal["auto", "legacy", "modern"]


class UsageError(Exception):
    """A command line that cannot be run (exit code 2)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckOptions:
    """One check: the server, what to do with it, and the bounds."""

    url: str | None = None
    command: tuple[str, ...] = ()
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    era: Era = "auto"
    watch_s: float = 0.0
    call: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict, repr=False)
    #: The outcome policy of the call: ``--outcomes FILE``, or the one entry a shorthand built.
    outcomes: OutcomePolicy | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_pages: int = CHECK_MAX_PAGES
    otlp: bool = False
    #: ``--pins FILE``: the approved catalog the discovery is judged against (``None``: the
    #: instrumentation's own setting, ``OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG``).
    pins: str | None = None

    @property
    def target(self) -> str:
        """The server as a person would name it (the URL without credentials, or the command)."""
        if self.url is not None:
            return _without_userinfo(self.url)
        return " ".join(self.command)


def _without_userinfo(url: str) -> str:
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@", r"\1", url)


def parse_headers(raw: list[str]) -> dict[str, str]:
    """``NAME=VALUE`` pairs; the value is never echoed back in an error."""
    headers: dict[str, str] = {}
    for item in raw:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not _HEADER_NAME.match(name):
            shown = name if _HEADER_NAME.match(name) else "?"
            msg = f"--header expects NAME=VALUE (got a header named {shown!r} without '=')"
            if sep:
                msg = "--header expects NAME=VALUE with NAME an HTTP header name"
            raise UsageError(msg)
        if "\n" in value or "\r" in value:
            raise UsageError(f"--header {name}: the value must be a single line")
        headers[name] = value
    return headers


def parse_arguments(raw: str | None) -> dict[str, Any]:
    """``--args JSON``: a JSON object (the tool's arguments)."""
    if raw is None:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        raise UsageError('--args expects a JSON object, e.g. \'{"query": "status"}\'') from None
    if not isinstance(value, dict):
        raise UsageError('--args expects a JSON object, e.g. \'{"query": "status"}\'')
    return value


def _literal(text: str) -> str:
    """``text`` as a policy template whose expansion is ``text`` itself (braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def _one_entry(tool: str, option: str, **entry: Any) -> OutcomePolicy:
    """The policy of one entry that a shorthand option builds for the called tool."""
    try:
        return OutcomePolicy.from_entries([{"tool": glob.escape(tool), **entry}], option)
    except OutcomePolicyError as exc:
        raise UsageError(f"{option}: {exc.problems[0].what}") from None


def parse_file_verifier(tool: str, raw: str) -> OutcomePolicy:
    """``PATH`` or ``PATH:SHA256`` (64 hex digits, optionally written ``sha256:<hex>``): the
    policy entry ``verify = "file"`` for ``tool``."""
    if not raw:
        raise UsageError("--verify-file expects PATH or PATH:SHA256")
    match = re.fullmatch(r"(.+?):(?:sha256:)?([0-9a-fA-F]{64})", raw)
    if match is None:
        return _one_entry(tool, "--verify-file", verify="file", path=_literal(raw))
    path, sha256 = _literal(match.group(1)), match.group(2).lower()
    return _one_entry(tool, "--verify-file", verify="file", path=path, sha256=sha256)


def _http_url(url: str) -> urllib.parse.SplitResult | None:
    """``url`` split, when it is http(s) with a host and a well-formed port (if any)."""
    try:
        parts = urllib.parse.urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or not port_ok:
        return None
    return parts


def parse_http_verifier(tool: str, url: str, status: int | None = None) -> OutcomePolicy:
    """``--verify-http URL`` (a port is part of the URL) and ``--verify-status STATUS`` (default
    200): the policy entry ``verify = "http"`` for ``tool``.

    The old ``URL:STATUS`` spelling read ``https://api.example.com:443`` as "expect 443", so a
    URL whose path ends in ``:`` and three digits is refused with the new spelling, never read
    either way silently.
    """
    parts = _http_url(url)
    if parts is None:
        raise UsageError("--verify-http expects an http:// or https:// URL (with its port, if any)")
    if parts.username is not None or parts.password is not None:
        raise UsageError("--verify-http: a URL with credentials (user:password@) is not supported")
    after_host = parts.path or parts.query or parts.fragment  # else a final :NNN is the port
    if after_host and re.search(r":[1-5]\d\d$", url):
        raise UsageError(
            "--verify-http: the expected status is given with --verify-status STATUS, not as "
            f":{url[-3:]} after the URL (a port goes after the host: https://host:8443/path)"
        )
    if status is not None and not 100 <= status <= 599:
        raise UsageError("--verify-status expects an HTTP status code (100 to 599)")
    entry = {"verify": "http", "url": _literal(url), "status": 200 if status is None else status}
    return _one_entry(tool, "--verify-http", **entry)


def not_required(tool: str) -> OutcomePolicy:
    """``--outcome-not-required``: the policy entry ``verify = "not_required"`` for ``tool``."""
    return _one_entry(tool, "--outcome-not-required", verify="not_required")


def parse_outcomes(path: str) -> OutcomePolicy:
    """``--outcomes FILE``: the policy file, validated now (a bad one is a usage error)."""
    try:
        return OutcomePolicy.load(path)
    except OutcomePolicyError as exc:
        raise UsageError(f"--outcomes {exc}") from None


def positive(name: str, value: float) -> float:
    """A bound that must be a positive number of seconds."""
    if not 0 < value < float("inf"):  # also rejects NaN
        raise UsageError(f"{name} expects a positive number of seconds")
    return value


def parse_pins_option(path: str | None) -> str | None:
    """``--pins FILE`` when the file can be opened (else a usage error naming it and why). Its
    contents are the instrumentation's to judge: a corrupt file fails closed, as in an agent."""
    if path is None:
        return None
    try:  # non-blocking: a FIFO or a device must not hang the check before its --timeout runs
        os.close(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)))
    except OSError as exc:
        raise UsageError(f"--pins {path}: cannot be read ({type(exc).__name__})") from None
    return path


class SdkMissingError(Exception):
    """A module of the MCP SDK that a command needs is missing; :func:`sdk_required` has said
    which on the command's error stream."""


@contextmanager
def sdk_required(
    command: str, err: TextIO, modules: frozenset[str] = MCP_CLIENT_MODULES
) -> Iterator[None]:
    """The imports inside need the MCP SDK: one that fails on a module of ``modules`` says so on
    ``err`` (``otel-mcp-health <command> needs the MCP SDK ...``) and raises
    :class:`SdkMissingError`; any other import error is raised as it is."""
    try:
        yield
    except ImportError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in modules:
            raise
        err.write(
            f"otel-mcp-health {command} needs the MCP SDK (module {missing!r} is missing): "
            "pip install 'otel-mcp-health[instruments]'\n"
        )
        raise SdkMissingError(missing) from None
