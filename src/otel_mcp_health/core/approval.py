"""Is a discovered catalog the one a person approved? (docs/evidence-format.md#member-digests)

:func:`judge_approval` compares the tools of one complete discovery with the pins of its server
(:mod:`otel_mcp_health.core.pins`) and classifies each tool:

- ``material``: a member the model reads for what a tool does changed (:data:`MATERIAL_MEMBERS`),
  or its change cannot be told apart (see below);
- ``cosmetic``: only :data:`COSMETIC_MEMBERS` changed;
- ``added``: listed, not pinned; ``removed``: pinned, not listed.

The verdict is ``approved`` when no tool changed materially and none was added (a removed tool or
a cosmetic change alone stays approved: the model cannot be misled by a tool it no longer sees,
nor by a display title), else ``drifted`` with reason ``material_change`` (first) or
``tool_added``; ``unpinned`` (``no_matching_pins``) without pins. Fail closed, never a crash:

- a pin with a per-tool digest that matches is unchanged; otherwise only the members the pin
  holds are compared (a partial pin compares nothing else), a member pinned ``absent`` that now
  exists is a change of that member; a digest that differs while every pinned member matches
  (a pin without members, or a hand-edited one) is ``material`` with no member named; the
  material members a partial pin lacks are named in :attr:`Approval.uncompared_members`, so an
  ``approved`` reached without comparing them never reads as a full approval;
- a member whose digest cannot be computed (RFC 8785 cannot write it) is a material change of
  that member, whether pinned or not;
- a name listed more than once: each definition is compared and the worst class wins (members
  joined), so a second, different definition cannot hide behind an approved one;
- a tool that is no object or has no string name: a material change of member ``name`` under
  the name ``""``; a tool list that cannot be iterated: one such change.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from otel_mcp_health.core import digest as _digest
from otel_mcp_health.core.pins import ServerPins, ToolPin, member_digest, tool_digest
from otel_mcp_health.core.reasons import ApprovalReason
from otel_mcp_health.core.vocabulary import ApprovalVerdict, ChangeKind

#: Members whose change alters what the model is told a tool does or takes (docs/model.md#catalog).
MATERIAL_MEMBERS: Final = (
    "name",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "execution",
)
#: Members the model reads for display only.
COSMETIC_MEMBERS: Final = ("title",)
#: At most this many tool names per class leave the process on a span.
MAX_TOOL_NAMES: Final = 64
_SEVERITY: Final = {ChangeKind.COSMETIC: 1, ChangeKind.MATERIAL: 2}


@dataclass(frozen=True)
class ToolChange:
    """One tool that is not exactly as approved: its name, class and the differing members."""

    name: str
    #: (A plain ``"material"`` ... is converted to the member; anything else: ``ValueError``.)
    kind: ChangeKind
    members: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ChangeKind(self.kind))


class _ChangedNames:
    """An approval's tool changes of one kind, as the sorted names of their tools (read-only)."""

    def __init__(self, kind: ChangeKind) -> None:
        self._kind = kind

    def __get__(self, approval: Approval, owner: object = None) -> tuple[str, ...]:
        return tuple(sorted(c.name for c in approval.changes if c.kind == self._kind))


@dataclass(frozen=True)
class Approval:
    """The approval of one discovery: verdict, reason (``None`` when approved) and changes.

    ``uncompared_members``: the material members (sorted) that were not compared for at least one
    listed tool, because its pin is partial (no per-tool digest) and does not hold them; ``name``
    never, as a pin is found by name. ``partial_tools``: those tools (sorted). Both are empty
    when every listed pinned tool has a full pin; neither changes the verdict."""

    verdict: ApprovalVerdict
    reason: ApprovalReason | None
    changes: tuple[ToolChange, ...] = ()
    uncompared_members: tuple[str, ...] = ()
    partial_tools: tuple[str, ...] = ()

    material = _ChangedNames(ChangeKind.MATERIAL)
    cosmetic = _ChangedNames(ChangeKind.COSMETIC)
    added = _ChangedNames(ChangeKind.ADDED)
    removed = _ChangedNames(ChangeKind.REMOVED)

    @property
    def changed_members(self) -> tuple[str, ...]:
        """The projected members that differ in any tool (sorted)."""
        return tuple(sorted({member for change in self.changes for member in change.members}))

    def partial(self, tool_name: str) -> bool:
        """``tool_name``'s definition was judged against a partial pin: some material member
        of it was never compared."""
        return tool_name in self.partial_tools

    def unapproved(self, tool_name: str) -> bool:
        """A call of ``tool_name`` uses a definition nobody approved: the tool was added or
        changed materially, or (pins unreadable) any tool."""
        if self.reason is ApprovalReason.PINS_UNREADABLE:
            return True
        return any(
            change.name == tool_name and change.kind in (ChangeKind.MATERIAL, ChangeKind.ADDED)
            for change in self.changes
        )


#: The approval of every catalog of a server the pins should cover when they cannot be read.
UNREADABLE_PINS: Final = Approval(ApprovalVerdict.DRIFTED, ApprovalReason.PINS_UNREADABLE)
#: The approval of a discovery whose server no pin entry matches.
UNPINNED: Final = Approval(ApprovalVerdict.UNPINNED, ApprovalReason.NO_MATCHING_PINS)


def _differing(pin: ToolPin, tool: Mapping[str, Any]) -> tuple[list[str], bool]:
    """The members of ``tool`` that differ from ``pin`` (pinned ones, and unwritable ones), and
    whether any member was unwritable."""
    found, unwritable = [], False
    for member in _digest.PROJECTED_MEMBERS:
        try:
            current = member_digest(tool, member)
        except _digest.DigestError:
            found.append(member)
            unwritable = True
            continue
        pinned = pin.members.get(member)
        if pinned is not None and pinned != current:
            found.append(member)
    return found, unwritable


def _uncompared(pin: ToolPin) -> tuple[str, ...]:
    """The material members a pin never compares: those a partial pin does not hold."""
    if pin.digest is not None:
        return ()
    return tuple(m for m in MATERIAL_MEMBERS if m != "name" and m not in pin.members)


def _compare(pin: ToolPin, tool: Mapping[str, Any], known: str | None) -> ToolChange | None:
    """How one definition differs from its pin; ``known``: its per-tool digest, if computed."""
    if pin.digest is not None and (known or _tool_digest(tool)) == pin.digest:
        return None
    members, unwritable = _differing(pin, tool)
    if not members and pin.digest is None:
        return None
    cosmetic = members and all(member in COSMETIC_MEMBERS for member in members)
    kind = ChangeKind.COSMETIC if cosmetic and not unwritable else ChangeKind.MATERIAL
    return ToolChange(pin.name, kind, tuple(sorted(members)))


def _tool_digest(tool: Mapping[str, Any]) -> str | None:
    try:
        return tool_digest(tool)
    except _digest.DigestError:
        return None


def _worse(old: ToolChange | None, new: ToolChange | None) -> ToolChange | None:
    if old is None or new is None:
        return old or new
    kind = old.kind if _SEVERITY[old.kind] >= _SEVERITY[new.kind] else new.kind
    return ToolChange(old.name, kind, tuple(sorted({*old.members, *new.members})))


def _name(tool: object) -> str | None:
    try:
        name = tool.get("name") if isinstance(tool, Mapping) else None
    except Exception:  # noqa: BLE001 - a Mapping whose lookup misbehaves
        return None
    return str.__str__(name) if isinstance(name, str) else None


def _known_digests(tools: list[Any]) -> dict[str, str]:
    """Per-tool digests from the shared digester (warm after the discovery's own digest)."""
    try:
        return _digest.tool_digests(tools)
    except _digest.DigestError:
        return {}


def _changes(pins: ServerPins, tools: list[Any]) -> list[ToolChange]:
    pinned = {pin.name: pin for pin in pins.tools}
    names = [_name(tool) for tool in tools]
    known = _known_digests(tools)
    for name, count in Counter(names).items():
        if count > 1 and name is not None:
            known.pop(name, None)  # one digest of all definitions: judge each on its own
    judged: dict[str, ToolChange | None] = {}
    unnamed = None
    for tool, name in zip(tools, names, strict=True):
        if name is None:
            unnamed = ToolChange("", ChangeKind.MATERIAL, ("name",))
        elif name not in pinned:
            judged[name] = ToolChange(name, ChangeKind.ADDED)
        else:
            change = _compare(pinned[name], tool, known.get(name))
            judged[name] = _worse(judged[name], change) if name in judged else change
    changes = [change for change in judged.values() if change is not None]
    changes += [ToolChange(name, ChangeKind.REMOVED) for name in pinned if name not in judged]
    return changes + ([unnamed] if unnamed else [])


def _partial(pins: ServerPins, tools: list[Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(uncompared members, tools judged against a partial pin), both sorted."""
    pinned = {pin.name: pin for pin in pins.tools}
    uncompared: dict[str, tuple[str, ...]] = {}
    for tool in tools:
        name = _name(tool)
        if name is not None and name in pinned and (missing := _uncompared(pinned[name])):
            uncompared[name] = missing
    members = {member for missing in uncompared.values() for member in missing}
    return tuple(sorted(members)), tuple(sorted(uncompared))


def _verdict(
    changes: list[ToolChange], partial: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
) -> Approval:
    ordered = tuple(sorted(changes, key=lambda change: (change.name, change.kind)))
    kinds = {change.kind for change in ordered}
    if ChangeKind.MATERIAL in kinds:
        verdict, reason = ApprovalVerdict.DRIFTED, ApprovalReason.MATERIAL_CHANGE
    elif ChangeKind.ADDED in kinds:
        verdict, reason = ApprovalVerdict.DRIFTED, ApprovalReason.TOOL_ADDED
    else:
        verdict, reason = ApprovalVerdict.APPROVED, None
    return Approval(verdict, reason, ordered, *partial)


def judge_approval(pins: ServerPins | None, tools: Sequence[Mapping[str, Any]]) -> Approval:
    """The approval of one complete discovery's ``tools`` against its server's ``pins``
    (``None``: no entry matched, :data:`UNPINNED`). Never raises for any ``tools``."""
    if pins is None:
        return UNPINNED
    try:
        items = list(tools)
    except Exception:  # noqa: BLE001 - not iterable, or an iterator that fails
        return _verdict([ToolChange("", ChangeKind.MATERIAL, ("name",))])
    return _verdict(_changes(pins, items), _partial(pins, items))


__all__ = [
    "COSMETIC_MEMBERS",
    "MATERIAL_MEMBERS",
    "MAX_TOOL_NAMES",
    "UNPINNED",
    "UNREADABLE_PINS",
    "Approval",
    "ToolChange",
    "judge_approval",
]
