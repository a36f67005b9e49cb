"""Reading an outcome policy: ``[[outcome]]`` tables, validated key by key (private).

Every problem names the file, the entry (its 1-based position among the ``[[outcome]]`` tables)
and the key, never the key's value: a policy's paths and URLs may be private. One problem and the
whole file is refused (:class:`OutcomePolicyError`): a half-read policy would verify some tools and
silently skip others.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from otel_mcp_health._files import INPUT_FILE_WORDS, READ_ERRORS, say_read_failure
from otel_mcp_health.core import toml_fields
from otel_mcp_health.core.toml_fields import FieldError, RefusedFileError
from otel_mcp_health.core.vocabulary import OUTCOME_NOT_REQUIRED
from otel_mcp_health.verifiers import _policy_kinds as kinds
from otel_mcp_health.verifiers._builtins import MAX_DIGEST_BYTES
from otel_mcp_health.verifiers._receipts import Verifier
from otel_mcp_health.verifiers._registry import DEFAULT_TIMEOUT_S, PolicyRule
from otel_mcp_health.verifiers._templates import (
    Template,
    TemplateError,
    fixed_origin,
    literal_dot_segment,
)

#: The entry-point group of packaged verifiers (``verify = "entry_point"``, ``name = ...``).
ENTRY_POINT_GROUP: Final = "otel_mcp_health.verifiers"
_KEY_SHOWN: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_REFERENCE: Final = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
_SHA256: Final = re.compile(r"(?:sha256:)?[0-9a-fA-F]{64}")


@dataclass(frozen=True, slots=True)
class Problem:
    """What is wrong, and where: the entry (1-based, ``None`` for the file) and the key."""

    entry: int | None
    key: str | None
    what: str

    def __str__(self) -> str:
        where = [] if self.entry is None else [f"entry {self.entry}"]
        if self.key is not None:
            shown = self.key if _KEY_SHOWN.fullmatch(self.key) else "<not a plain name>"
            where.append(f"key {shown!r}")
        return ", ".join(where) + ": " + self.what if where else self.what


class OutcomePolicyError(RefusedFileError[Problem]):
    """A policy that is refused: its source and every problem found."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One ``[[outcome]]`` table: its position, kind, rule and the argument names it reads."""

    index: int
    kind: str
    rule: PolicyRule
    reads: tuple[str, ...] = ()


def _template(value: Any) -> Template:
    try:
        return Template.parse(toml_fields.text(value))
    except TemplateError as exc:
        raise FieldError(str(exc)) from None


def _status(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 599:
        raise FieldError("expects an HTTP status code (100 to 599)")
    return value


def _sha256(value: Any) -> Template:
    template = _template(value)
    if not template.fields and not _SHA256.fullmatch(template.prefix):
        raise FieldError(
            "expects 64 hex digits (optionally sha256:...) or a template such as {sha256}"
        )
    return template


def _path(value: Any) -> Template:
    """A file path whose placeholders come after a literal directory: the policy, not an
    argument, chooses where to look (docs/outcomes.md#arguments-are-data)."""
    template = _template(value)
    if template.fields and template.base is None:
        raise FieldError(
            "expects a literal directory, not the filesystem root, before the first "
            "placeholder (e.g. /srv/out/{name}.csv): an argument may not choose the directory"
        )
    return template


def _url(value: Any) -> Template:
    """An http(s) URL whose scheme, host and port are literal: an argument may not choose where
    the request goes (docs/outcomes.md#arguments-are-data)."""
    template = _template(value)
    whole = bool(template.fields) and not template.prefix  # "{url}": the argument is the URL
    if not whole and not template.prefix.lower().startswith(("http://", "https://")):
        raise FieldError("expects an http:// or https:// URL, or a template that starts with one")
    if not fixed_origin(template):
        raise FieldError(
            "expects a literal scheme, host and port ended by / before the first placeholder "
            "(e.g. https://pages.example.com/{slug}): an argument may not choose the host"
        )
    if literal_dot_segment(template):
        raise FieldError(
            "expects no . or .. path segment in its literal text (write the path the server "
            "should get): a template's dot segments are refused on every call"
        )
    return template


def _max_bytes(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise FieldError("expects a positive number of bytes")
    return value


def _reference(value: Any) -> str:
    if not _REFERENCE.fullmatch(toml_fields.text(value)):
        raise FieldError("expects package.module:function")
    return str(value)


def _entry_point(value: Any) -> importlib.metadata.EntryPoint:
    name = toml_fields.text(value)
    found = {
        ep.value: ep
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
        if ep.name == name
    }
    if not found:
        raise FieldError(f"no installed distribution has this entry point in {ENTRY_POINT_GROUP}")
    if len(found) > 1:
        raise FieldError("two installed distributions define this entry point")
    return next(iter(found.values()))


_Parse = Callable[[Any], Any]
_COMMON: Final[dict[str, tuple[_Parse, bool]]] = {
    "tool": (toml_fields.text, True),
    "server": (toml_fields.text, False),
    "read_only": (toml_fields.flag, False),
    "verify": (toml_fields.text, True),
}
_TIMEOUT: Final = {"timeout": (toml_fields.positive_seconds, False)}
#: The keys of each kind, with their parser and whether they are required.
KINDS: Final[dict[str, dict[str, tuple[_Parse, bool]]]] = {
    OUTCOME_NOT_REQUIRED: {},
    "file": {
        "path": (_path, True),
        "sha256": (_sha256, False),
        "max_bytes": (_max_bytes, False),
        **_TIMEOUT,
    },
    "http": {
        "url": (_url, True),
        "status": (_status, False),
        "follow_redirects": (toml_fields.flag, False),
        **_TIMEOUT,
    },
    "sqlite": {"database": (_path, True), "query": (toml_fields.text, True), **_TIMEOUT},
    "python": {"callable": (_reference, True), **_TIMEOUT},
    "entry_point": {"name": (_entry_point, True), **_TIMEOUT},
}


def _read_values(index: int, table: Any) -> tuple[list[Problem], str | None, dict[str, Any]]:
    """The parsed values of one table, its kind, and what is wrong with it."""
    if not isinstance(table, dict):
        return [Problem(index, None, "expects a table")], None, {}
    problems: list[Problem] = []
    keys = dict(_COMMON)
    kind = table.get("verify")
    if isinstance(kind, str) and kind in KINDS:
        keys.update(KINDS[kind])
        problems += [Problem(index, key, "unknown key") for key in table if key not in keys]
    elif "verify" in table:
        expected = ", ".join(KINDS)
        problems.append(Problem(index, "verify", f"unknown verifier kind (expected {expected})"))
        del keys["verify"]  # said once; the keys of an unknown kind are not judged
        kind = None
    values: dict[str, Any] = {}
    for key, (parse, required) in keys.items():
        if key not in table:
            if required:
                problems.append(Problem(index, key, "missing"))
            continue
        try:
            values[key] = parse(table[key])
        except FieldError as exc:
            problems.append(Problem(index, key, str(exc)))
    return problems, kind, values


def _not_required(
    _values: Mapping[str, Any], _where: str
) -> tuple[Verifier | str, tuple[str, ...]]:
    return OUTCOME_NOT_REQUIRED, ()


def _file(values: Mapping[str, Any], _where: str) -> tuple[Verifier | str, tuple[str, ...]]:
    path, sha256 = values["path"], values.get("sha256")
    reads = path.fields + (sha256.fields if sha256 is not None else ())
    timeout = values.get("timeout", DEFAULT_TIMEOUT_S)
    max_bytes = values.get("max_bytes", MAX_DIGEST_BYTES)
    return kinds.file_verifier(path, sha256, timeout, max_bytes), reads


def _http(values: Mapping[str, Any], _where: str) -> tuple[Verifier | str, tuple[str, ...]]:
    url = values["url"]
    timeout = values.get("timeout", DEFAULT_TIMEOUT_S)
    follow = values.get("follow_redirects", False)
    verifier = kinds.http_verifier(url, values.get("status", 200), timeout, follow_redirects=follow)
    return verifier, url.fields


def _sqlite(values: Mapping[str, Any], _where: str) -> tuple[Verifier | str, tuple[str, ...]]:
    database, query = values["database"], values["query"]
    timeout = values.get("timeout", DEFAULT_TIMEOUT_S)
    reads = database.fields + kinds.query_parameters(query)
    return kinds.sqlite_verifier(database, query, timeout), reads


def _python(values: Mapping[str, Any], where: str) -> tuple[Verifier | str, tuple[str, ...]]:
    load = kinds.load_reference(values["callable"])
    timeout = values.get("timeout", DEFAULT_TIMEOUT_S)
    return kinds.imported_verifier(load, "callable", f"{where}, key 'callable'", timeout), ()


def _packaged(values: Mapping[str, Any], where: str) -> tuple[Verifier | str, tuple[str, ...]]:
    entry_point: importlib.metadata.EntryPoint = values["name"]
    method = entry_point.name if _KEY_SHOWN.fullmatch(entry_point.name) else "entry_point"
    timeout = values.get("timeout", DEFAULT_TIMEOUT_S)
    where = f"{where}, key 'name'"
    return kinds.imported_verifier(entry_point.load, method, where, timeout), ()


_BUILDERS: Final = {
    OUTCOME_NOT_REQUIRED: _not_required,
    "file": _file,
    "http": _http,
    "sqlite": _sqlite,
    "python": _python,
    "entry_point": _packaged,
}
_REFERENCE_KEYS: Final = {"python": "callable", "entry_point": "name"}


def _entry(
    index: int, table: Any, source: str, *, strict: bool
) -> tuple[list[Problem], Entry | None]:
    """One entry, or what is wrong with it. ``strict`` also imports ``python`` and entry-point
    verifiers now and reports the ones that cannot be imported."""
    problems, kind, values = _read_values(index, table)
    if problems or kind is None:
        return problems, None
    choice, reads = _BUILDERS[kind](values, f"{source}, entry {index}")
    error = getattr(choice.fn, "load_error", None) if isinstance(choice, Verifier) else None
    if strict and error is not None:
        return [Problem(index, _REFERENCE_KEYS[kind], f"cannot be imported now ({error})")], None
    rule = PolicyRule(values["tool"], choice, values.get("server"), values.get("read_only"))
    return [], Entry(index, kind, rule, tuple(dict.fromkeys(reads)))


def parse_document(
    document: Mapping[str, Any], source: str, *, strict: bool = False
) -> tuple[Entry, ...]:
    """The entries of a parsed policy, in order (:class:`OutcomePolicyError` on any problem)."""
    problems = [
        Problem(None, key, "unknown key (a policy holds [[outcome]] tables)")
        for key in document
        if key != "outcome"
    ]
    tables = document.get("outcome", [])
    if not isinstance(tables, list):
        problems.append(Problem(None, "outcome", "expects [[outcome]] tables"))
        tables = []
    entries: list[Entry] = []
    for index, table in enumerate(tables, start=1):
        found, entry = _entry(index, table, source, strict=strict)
        problems += found
        if entry is not None:
            entries.append(entry)
    if problems:
        raise OutcomePolicyError(source, problems)
    return tuple(entries)


def read_document(path: Path) -> dict[str, Any]:
    """The TOML document of a policy file (:class:`OutcomePolicyError` naming what is wrong)."""
    source = str(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except READ_ERRORS as exc:
        why = say_read_failure(exc, INPUT_FILE_WORDS)
        raise OutcomePolicyError(source, [Problem(None, None, why)]) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        position = toml_fields.syntax_position(exc)
        what = "not valid TOML" + (f" {position}" if position else "")
        raise OutcomePolicyError(source, [Problem(None, None, what)]) from None
