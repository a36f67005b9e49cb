"""The classified diff between approved pins and new ones, and how ``pin`` prints changes.

A change is classified per tool exactly like the run-time approval (docs/approval.md):
``added``, ``removed``, ``material`` (any member other than ``title`` differs, or stops or
starts being pinned) or ``cosmetic`` (only ``title``). Only tool names and member names are
printed, never a description, schema or digest value; a name is printed as a JSON string with
every non-printable character escaped, so a hostile name cannot break a line or a terminal.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from otel_mcp_health.core.approval import COSMETIC_MEMBERS, ToolChange
from otel_mcp_health.core.pins import ServerPins, ToolPin
from otel_mcp_health.core.vocabulary import ChangeKind

KINDS: Final = tuple(ChangeKind)


def shown(text: str) -> str:
    """``text`` quoted for one line of output: JSON escapes, non-printable characters as
    ``\\uXXXX`` (line breaks, bidirectional overrides, zero-width characters)."""
    quoted = json.dumps(text, ensure_ascii=False)
    readable = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in quoted)
    if text.isascii():
        return readable
    # A name that is not plain ASCII may imitate another (``read_f\u0456le``, Cyrillic i):
    # its escaped form beside it lets a reviewer tell them apart.
    return f"{readable} (ascii {json.dumps(text)})"


def _members(old: ToolPin, new: ToolPin) -> tuple[str, ...]:
    keys = set(old.members) | set(new.members)
    return tuple(sorted(k for k in keys if old.members.get(k) != new.members.get(k)))


def _changed(old: ToolPin, new: ToolPin) -> ToolChange | None:
    members = _members(old, new)
    if not members:
        return None
    cosmetic = all(member in COSMETIC_MEMBERS for member in members)
    return ToolChange(new.name, ChangeKind.COSMETIC if cosmetic else ChangeKind.MATERIAL, members)


def diff_pins(old: ServerPins | None, new: ServerPins) -> tuple[ToolChange, ...]:
    """Every tool that differs between ``old`` (``None``: nothing approved yet) and ``new``,
    sorted by tool name."""
    before: Mapping[str, ToolPin] = {t.name: t for t in old.tools} if old else {}
    after: Mapping[str, ToolPin] = {t.name: t for t in new.tools}
    changes: list[ToolChange] = []
    for name in sorted(before.keys() | after.keys()):
        if name not in before:
            changes.append(ToolChange(name, ChangeKind.ADDED))
        elif name not in after:
            changes.append(ToolChange(name, ChangeKind.REMOVED))
        elif (change := _changed(before[name], after[name])) is not None:
            changes.append(change)
    return tuple(changes)


def summary(changes: Sequence[ToolChange]) -> str:
    """``1 material, 0 cosmetic, 2 added, 0 removed``."""
    return ", ".join(f"{sum(c.kind is kind for c in changes)} {kind.value}" for kind in KINDS)


def change_lines(changes: Iterable[ToolChange]) -> list[str]:
    """One line per changed tool: its class, its name, the members that differ."""
    lines = []
    for change in changes:
        names = (m if m.isidentifier() else shown(m) for m in change.members)
        members = f"  ({', '.join(names)})" if change.members else ""
        lines.append(f"  {change.kind.value:<9} {shown(change.name)}{members}\n")
    return lines


def label(pins: ServerPins) -> str:
    """The server entry as one line: its name, address and port globs (``any`` when omitted)."""
    address = shown(pins.address) if pins.address is not None else "any"
    port = shown(pins.port) if pins.port is not None else "any"
    return f"server {shown(pins.name)} (address {address}, port {port})"
