"""The pin file's TOML, read and written (docs/evidence-format.md#pin-file).

Reading uses :mod:`tomllib` and then checks every key, type and digest: a pin file is a security
control, so anything unexpected (an unknown key, a misspelt table) is refused rather than
ignored, and the caller fails closed. Writing is our own: TOML has no canonical form, and the
pins must diff well in review, so :func:`render_document` writes one layout only, with every
string in a basic string whose ``"``, ``\\`` and control characters are escaped (tool names are
chosen by servers). Its output is parsed back before it is returned, so it always reads.

:class:`PinsError` messages name the position of a fault (``server 2, tool 3``) and its kind,
never a value from the file.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from otel_mcp_health.core.canonical import PROJECTED_MEMBERS
from otel_mcp_health.core.reasons import PinsReason
from otel_mcp_health.core.toml_fields import syntax_position, unknown_keys

#: The largest pin file read (a pin is ~700 bytes per tool: 10,000 tools stay far below it).
MAX_PIN_FILE_BYTES: Final = 16 * 1024 * 1024
HEADER: Final = (
    "# otel-mcp-health approved catalog: digests and names only, review changes in pull requests."
)
_ABSENT: Final = "absent"
_DIGEST: Final = re.compile(r"sha256:[0-9a-f]{64}")
_TOP_KEYS: Final = frozenset({"format", "projection", "server"})
_SERVER_KEYS: Final = frozenset({"name", "address", "port", "source", "tool"})
_SERVER_FIELDS: Final = ("name", "address", "port", "source")
_TOOL_KEYS: Final = frozenset({"name", "digest", "members"})
_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


class PinsError(ValueError):
    """A pin file that cannot be used; ``reason`` is a :class:`PinsReason`."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class ServerDoc:
    """One checked ``[[server]]`` table: its string fields and its checked tool tables."""

    fields: Mapping[str, str]
    tools: tuple[Mapping[str, Any], ...]

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return iter(self.tools)


def _load(text: object) -> dict[str, Any]:
    if not isinstance(text, str):
        raise PinsError(PinsReason.NOT_TOML, f"expected text, got {type(text).__name__}")
    try:
        return tomllib.loads(text)
    except Exception as exc:  # noqa: BLE001 - TOMLDecodeError, RecursionError on deep nesting
        where = syntax_position(exc) if isinstance(exc, tomllib.TOMLDecodeError) else None
        raise PinsError(PinsReason.NOT_TOML, where or type(exc).__name__) from None


def _keys(table: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    if unknown := unknown_keys(table, allowed):
        raise PinsError(PinsReason.UNKNOWN_KEY, f"{where}: {len(unknown)} unknown key(s)")


def _string(table: Mapping[str, Any], key: str, where: str, *, required: bool) -> str | None:
    value = table.get(key)
    if value is None and not required:
        return None
    if value is None:
        raise PinsError(PinsReason.MISSING_KEY, f"{where}: no {key}")
    if not isinstance(value, str):
        raise PinsError(PinsReason.BAD_TYPE, f"{where}: {key} must be a string")
    return value


def _tables(value: object, where: str) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise PinsError(PinsReason.BAD_TYPE, f"{where} must be an array of tables")
    return value


def _digest(value: str | None, where: str, *, absent: bool = False) -> None:
    if value is not None and not _DIGEST.fullmatch(value) and not (absent and value == _ABSENT):
        raise PinsError(PinsReason.BAD_DIGEST, f"{where}: not sha256:<64 lowercase hex>")


def _tool(table: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    _keys(table, _TOOL_KEYS, where)
    name = _string(table, "name", where, required=True)
    digest = _string(table, "digest", where, required=False)
    _digest(digest, where + ", digest")
    members = table.get("members", {})
    if not isinstance(members, dict):
        raise PinsError(PinsReason.BAD_TYPE, f"{where}: members must be a table")
    _keys(members, frozenset(PROJECTED_MEMBERS), where + ", members")
    for key, value in members.items():
        if not isinstance(value, str):
            raise PinsError(PinsReason.BAD_TYPE, f"{where}, members: {key} must be a string")
        _digest(value, f"{where}, members, {key}", absent=True)
    if digest is None and not members:
        raise PinsError(PinsReason.EMPTY_TOOL, f"{where}: neither digest nor members")
    return {"name": name, "digest": digest, "members": dict(members)}


def _server(table: Mapping[str, Any], where: str) -> ServerDoc:
    _keys(table, _SERVER_KEYS, where)
    fields: dict[str, str] = {}
    for key in _SERVER_FIELDS:
        value = _string(table, key, where, required=key == "name")
        if value is not None:
            fields[key] = value
    tools, seen = [], set()
    for number, raw in enumerate(_tables(table.get("tool"), where + ", tool"), start=1):
        tool = _tool(raw, f"{where}, tool {number}")
        if tool["name"] in seen:
            raise PinsError(PinsReason.DUPLICATE_TOOL, f"{where}, tool {number}: name pinned twice")
        seen.add(tool["name"])
        tools.append(tool)
    return ServerDoc(fields, tuple(tools))


def parse_document(text: str, pins_format: str, projection: str) -> list[ServerDoc]:
    """The checked server tables of a pin file, in file order, or :class:`PinsError`."""
    document = _load(text)
    _keys(document, _TOP_KEYS, "top level")
    if document.get("format") != pins_format:
        raise PinsError(PinsReason.BAD_FORMAT, f"format is not {pins_format!r}")
    if document.get("projection") != projection:
        raise PinsError(PinsReason.BAD_PROJECTION, f"projection is not {projection!r}")
    servers, seen = [], set()
    for number, raw in enumerate(_tables(document.get("server"), "server"), start=1):
        server = _server(raw, f"server {number}")
        key = tuple(server.fields.get(k) for k in ("name", "address", "port"))
        if key in seen:
            raise PinsError(
                PinsReason.DUPLICATE_SERVER, f"server {number}: same name, address, port"
            )
        seen.add(key)
        servers.append(server)
    return servers


def _escape(char: str) -> str:
    short = _ESCAPES.get(char)
    if short is not None:
        return short
    if char.isprintable():
        return char
    return f"\\u{ord(char):04X}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08X}"


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string: ``"`` and ``\\`` escaped, and every character that is
    not printable (controls, line and paragraph separators, bidirectional overrides, zero-width
    characters) written as ``\\uXXXX``, so a reviewer sees what a name really holds. A lone
    surrogate (no TOML form) raises PinsError."""
    if _SURROGATE.search(value):
        raise PinsError(PinsReason.UNREPRESENTABLE, "a string holds a lone surrogate")
    if value.isprintable() and '"' not in value and "\\" not in value:
        return f'"{value}"'
    return '"' + "".join(map(_escape, value)) + '"'


_ToolRow = tuple[str, str | None, Mapping[str, str]]


def _render_tool(name: str, digest: str | None, members: Mapping[str, str]) -> list[str]:
    lines = ["", "[[server.tool]]", f"name = {toml_string(name)}"]
    if digest is not None:
        lines.append(f"digest = {toml_string(digest)}")
    if members:
        lines += ["", "[server.tool.members]"]
        lines += [f"{key} = {toml_string(members[key])}" for key in sorted(members)]
    return lines


def render_document(
    pins_format: str,
    projection: str,
    servers: Sequence[tuple[Mapping[str, str | None], Sequence[_ToolRow]]],
) -> str:
    """The one layout of a pin file (servers in the given order, tools by name, members by
    key); parsed back before it is returned, so a value it cannot hold raises PinsError."""
    lines = [HEADER, f"format = {toml_string(pins_format)}"]
    lines.append(f"projection = {toml_string(projection)}")
    for fields, tools in servers:
        lines += ["", "[[server]]"]
        for key in _SERVER_FIELDS:
            if (value := fields.get(key)) is not None:
                lines.append(f"{key} = {toml_string(value)}")
        for name, digest, members in sorted(tools, key=lambda row: row[0]):
            lines += _render_tool(name, digest, members)
    text = "\n".join(lines) + "\n"
    parse_document(text, pins_format, projection)
    return text
