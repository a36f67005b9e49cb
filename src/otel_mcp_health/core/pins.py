"""Approved catalogs: member digests, pins and their file (docs/evidence-format.md#pin-file).

A pin records what a person approved of one tool, as digests only (never a description or
schema in clear): its per-tool digest (:func:`otel_mcp_health.core.digest.tool_digests`) and the
digest of each projected member (:func:`member_digests`), so that a later change is classified
member by member (:mod:`otel_mcp_health.core.approval`). Pins are grouped per server; a server
entry applies to the servers whose exported label (name, address, port) its globs match.

The file is TOML, read with :mod:`tomllib` and written by :func:`render_pins`, a renderer of our
own whose output is sorted and stable, so that a change of pins reads as a small diff in review.
Every malformed input raises :class:`PinsError` (and nothing else); its message locates the fault
by position (server 2, tool 3), never by quoting the file, whose strings a server chose.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Final

from otel_mcp_health.core import digest as _digest
from otel_mcp_health.core.pin_codec import (
    PinsError,
    parse_document,
    render_document,
)
from otel_mcp_health.core.reasons import DigestReason, PinsReason
from otel_mcp_health.core.server import ServerLabel
from otel_mcp_health.core.vocabulary import DIGEST_PROJECTION

#: The ``format`` line of every pin file this version reads and writes.
PINS_FORMAT: Final = "otel-mcp-health/pins/1"
#: A member digest that says "the approved tool had no such member".
ABSENT: Final = "absent"


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _checked(tool: object) -> Mapping[str, Any]:
    """``tool`` as a mapping with a string ``name``, or :class:`DigestError` as the digest."""
    if not isinstance(tool, Mapping):
        raise _digest.DigestError(DigestReason.TOOL_NOT_AN_OBJECT, type(tool).__name__)
    try:
        name = tool.get("name")
    except Exception as exc:  # noqa: BLE001 - a Mapping whose lookup misbehaves
        raise _digest.DigestError(DigestReason.TOOL_NOT_AN_OBJECT, type(exc).__name__) from None
    if not isinstance(name, str):
        raise _digest.DigestError(DigestReason.TOOL_WITHOUT_NAME, type(name).__name__)
    return tool


def member_digest(tool: Mapping[str, Any], member: str) -> str:
    """``sha256:<hex>`` of the RFC 8785 bytes of one member's value, or :data:`ABSENT`."""
    try:
        present = member in tool
        value = tool[member] if present else None
    except Exception as exc:  # noqa: BLE001 - a Mapping whose lookup misbehaves
        raise _digest.DigestError(DigestReason.TOOL_NOT_AN_OBJECT, type(exc).__name__) from None
    return _sha256(_digest.canonicalize(value)) if present else ABSENT


def member_digests(tool: Mapping[str, Any]) -> dict[str, str]:
    """Every projected member (``core.digest.PROJECTED_MEMBERS``) -> its digest or :data:`ABSENT`.

    Raises :class:`otel_mcp_health.core.digest.DigestError` as the catalog digest does (a tool
    that is no object, has no string name, or holds a value RFC 8785 cannot write)."""
    checked = _checked(tool)
    return {member: member_digest(checked, member) for member in _digest.PROJECTED_MEMBERS}


def tool_digest(tool: Mapping[str, Any]) -> str:
    """The per-tool digest of one tool (as ``core.digest.tool_digests``), or DigestError."""
    checked = _checked(tool)
    return _sha256(_digest.canonicalize(_digest.project_tool(checked)))


@dataclass(frozen=True)
class ToolPin:
    """One approved tool: its per-tool digest (``None`` in a partial pin) and member digests
    (a member not in ``members`` is not pinned and never compared)."""

    name: str
    digest: str | None
    members: Mapping[str, str] = field(default_factory=dict)


def _glob(pattern: str | None, value: str | None) -> bool:
    return pattern is None or fnmatchcase(value if value is not None else "", pattern)


@dataclass(frozen=True)
class ServerPins:
    """The pins of the servers whose label matches ``name``, ``address`` and ``port`` (globs,
    :func:`fnmatch.fnmatchcase`; ``None`` = any); ``source`` is provenance, never compared."""

    name: str
    address: str | None
    port: str | None
    source: str | None
    tools: tuple[ToolPin, ...]

    def matches(self, label: ServerLabel) -> bool:
        """Every glob matches the label (an unknown label part reads as the empty string)."""
        port = str(label.port) if label.port is not None else None
        return (
            _glob(self.name, label.name)
            and _glob(self.address, label.address)
            and _glob(self.port, port)
        )

    def shadows(self, other: ServerPins) -> bool:
        """Every label ``other``'s globs read literally would be matched by this entry first."""
        return (
            _glob(self.name, other.name)
            and _glob(self.address, other.address)
            and _glob(self.port, other.port)
        )

    @property
    def key(self) -> tuple[str, str, str]:
        """What identifies the entry in a file (and sorts it): name, address, port."""
        return (self.name, self.address or "", self.port or "")


@dataclass(frozen=True)
class PinFile:
    """A parsed pin file: its server entries in file order (the first match wins)."""

    servers: tuple[ServerPins, ...] = ()

    def for_server(self, label: ServerLabel) -> ServerPins | None:
        """The first entry whose globs all match ``label``, or ``None`` (unpinned)."""
        return next((server for server in self.servers if server.matches(label)), None)

    def upsert(self, server: ServerPins) -> PinFile:
        """This file with ``server`` replacing the entry of the same :attr:`ServerPins.key` in
        place, else inserted after every entry its globs would shadow (they keep the servers
        they judge: the first match wins), then before the first entry whose key sorts after
        it or whose globs match its own (which would shadow it)."""
        servers = list(self.servers)
        for index, old in enumerate(servers):
            if old.key == server.key:
                servers[index] = server
                return PinFile(tuple(servers))
        low = max((i + 1 for i, old in enumerate(servers) if server.shadows(old)), default=0)
        at = next(
            (
                i
                for i, old in enumerate(servers)
                if i >= low and (old.key > server.key or old.shadows(server))
            ),
            len(servers),
        )
        servers.insert(at, server)
        return PinFile(tuple(servers))

    def takeovers(self, server: ServerPins) -> tuple[ServerPins, ...]:
        """The other entries whose own labels (globs read literally) ``server`` matches first
        in this file: entries it would silently take over, or that would take it over."""
        found = []
        for entry in self.servers:
            first = next((e for e in self.servers if e is entry or e.shadows(entry)), entry)
            if (entry.key == server.key) != (first.key == server.key):
                found.append(entry if entry.key != server.key else first)
        return tuple(found)


def pin_server(
    tools: Iterable[Mapping[str, Any]],
    *,
    name: str,
    address: str | None = None,
    port: str | int | None = None,
    source: str | None = None,
) -> ServerPins:
    """Pins of every tool in ``tools`` (full pins: per-tool digest and all member digests).

    Raises :class:`otel_mcp_health.core.digest.DigestError` for a tool that has no digest, and
    :class:`PinsError` (``pins_duplicate_tool``) for a name listed with two different
    definitions (which of them was approved would be ambiguous); identical repeats collapse."""
    pins: dict[str, ToolPin] = {}
    try:
        items = list(tools)
    except Exception as exc:  # noqa: BLE001 - not iterable, or an iterator that fails
        raise _digest.DigestError(DigestReason.TOOLS_NOT_A_LIST, type(exc).__name__) from None
    for tool in items:
        members = member_digests(tool)
        pin = ToolPin(str.__str__(tool["name"]), tool_digest(tool), members)
        if pins.setdefault(pin.name, pin) != pin:
            raise PinsError(PinsReason.DUPLICATE_TOOL, "a tool name is listed twice, differently")
    ordered = tuple(pins[key] for key in sorted(pins))
    return ServerPins(name, address, None if port is None else str(port), source, ordered)


def parse_pins(text: str) -> PinFile:
    """The pin file in ``text``, or :class:`PinsError` (never another exception). Each entry's
    tools come sorted by name, as the writer writes them, so a hand-edited file in another order
    reads the same and survives a rewrite unchanged."""
    document = parse_document(text, PINS_FORMAT, DIGEST_PROJECTION)
    servers = []
    for server in document:
        listed = (ToolPin(t["name"], t.get("digest"), t.get("members", {})) for t in server)
        tools = tuple(sorted(listed, key=lambda pin: pin.name))
        servers.append(_server(server.fields, tools))
    return PinFile(tuple(servers))


def _server(fields: Mapping[str, str], tools: tuple[ToolPin, ...]) -> ServerPins:
    return ServerPins(
        fields["name"], fields.get("address"), fields.get("port"), fields.get("source"), tools
    )


def render_pins(pins: PinFile) -> str:
    """The TOML text of ``pins``: servers in order, tools by name, members by key; stable, so
    ``render_pins(parse_pins(render_pins(p))) == render_pins(p)``. Raises :class:`PinsError`
    (``pins_unrepresentable``) for a string TOML cannot hold (a lone surrogate)."""
    servers = []
    for server in pins.servers:
        fields: dict[str, str | None] = {
            "name": server.name,
            "address": server.address,
            "port": server.port,
        }
        fields["source"] = server.source
        tools: list[tuple[str, str | None, Mapping[str, str]]] = [
            (tool.name, tool.digest, tool.members) for tool in server.tools
        ]
        servers.append((fields, tools))
    return render_document(PINS_FORMAT, DIGEST_PROJECTION, servers)


__all__ = [
    "ABSENT",
    "PINS_FORMAT",
    "PinFile",
    "PinsError",
    "ServerLabel",
    "ServerPins",
    "ToolPin",
    "member_digest",
    "member_digests",
    "parse_pins",
    "pin_server",
    "render_pins",
    "tool_digest",
]
