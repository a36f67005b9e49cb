"""What a model was offered, mapped back to MCP tools and compared (docs/model.md#agents).

Agent frameworks hand their model the MCP tools they converted, rewritten on the way (measured in
docs/frameworks.md#rewriting): a prefix on the name (``plugin-create_ticket``), a sanitised or
shortened name, a strict-mode schema (``additionalProperties: false``, every property required,
``"strict"``), titles added or dropped, optional properties as ``anyOf [type, null]`` with
``default: null``, ``$ref`` s inlined, descriptions shortened. Comparing the offered definition
with the discovered one byte for byte would call every framework stale, so both sides are
reduced to a :class:`ToolForm`: what survives those rewrites. Two forms are the same tool
definition when their schemas' reductions are equal and their descriptions are equal (one may be
a shortened head of the other). A change a framework's rewriting erases (a property made
required, a property's own description) is therefore not seen here; a changed tool description,
an added, removed or retyped property is.

Pure: no clock, no I/O. Offered definitions are attacker-controlled input: every walk is bounded
in depth and nodes, and anything JSON cannot hold reduces to a marker that equals no discovered
schema.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from otel_mcp_health.core.evidence import InstallCheck
from otel_mcp_health.core.schema_reduction import MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, reduced_schema

#: The head of a description kept for the shortened-description comparison.
DESCRIPTION_HEAD: Final = 4096
#: The shortest head taken for a shortened copy of a longer description when it ends with an
#: ellipsis, and when it does not (a cut at a length limit): a short head without an ellipsis is
#: more likely an older description that a newer one extended.
MIN_SHORTENED: Final = 16
MIN_CUT: Final = 256
#: Separators frameworks put between a prefix and the tool name.
_SEPARATORS: Final = frozenset("-_.:")
_UNSAFE_NAME: Final = re.compile(r"[^A-Za-z0-9_-]")
#: The longest tool name the LLM APIs accept; frameworks shorten longer names to it.
_NAME_LIMIT: Final = 64
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class OfferedTool:
    """One tool definition a request offered its model, as the request carried it: its name,
    its description and its parameter schema (any JSON value: attacker-shaped input is kept
    as is and reduced later, never trusted). Kept in memory only, never exported."""

    name: str
    description: str | None = None
    parameters: Any = None


@dataclass(frozen=True, slots=True)
class ToolForm:
    """A tool definition reduced to what survives framework rewriting (in memory only).

    ``description_head``: the first :data:`DESCRIPTION_HEAD` characters of the description with
    whitespace collapsed (empty: none); ``description_digest`` and ``description_length`` of
    the whole; ``schema``: the digest of the reduced parameter schema.
    """

    description_head: str
    description_digest: str
    description_length: int
    schema: str


def tool_form(tool: Mapping[str, Any]) -> ToolForm:
    """The form of a discovered MCP tool (its wire dict: ``description``, ``inputSchema``)."""
    description = tool.get("description")
    return _form(description if isinstance(description, str) else None, tool.get("inputSchema"))


def offered_form(tool: OfferedTool) -> ToolForm:
    """The form of a tool definition a model request offered."""
    description = tool.description if isinstance(tool.description, str) else None
    return _form(description, tool.parameters)


def form_differences(offered: ToolForm, discovered: ToolForm) -> tuple[str, ...]:
    """The members in which an offered definition differs from a discovered one, as MCP names
    them (``description``, ``inputSchema``); empty when it is the same definition. An offered
    description that is empty (a framework that drops it), any offered description of a tool
    that has none (a framework fills one in), or a shortened head of the discovered
    one (at least :data:`MIN_SHORTENED` characters ending with an ellipsis, or :data:`MIN_CUT`
    without one) counts as the same."""
    members = []
    if not _same_description(offered, discovered):
        members.append("description")
    if offered.schema != discovered.schema:
        members.append("inputSchema")
    return tuple(members)


def same_form(offered: ToolForm, discovered: ToolForm) -> bool:
    return not form_differences(offered, discovered)


class ToolIndex(Generic[K]):
    """Maps offered tool names back to the MCP tools of the known servers.

    ``servers``: per server key, the forms of its retained complete discoveries by MCP tool name
    (oldest first, the latest last). An offered name maps to an MCP tool when it is that tool's
    name, its sanitised name (``[A-Za-z0-9_-]``, at most 64 characters), or ends with one of
    those after a separator (``-``, ``_``, ``.``, ``:``: a framework's prefix). A name that
    matches only after a prefix a one-word MCP name (``answer`` in ``final_answer``) must also
    carry a definition one of the server's retained discoveries had (otherwise it is an
    application's own function that happens to end like an MCP tool); a compound MCP name
    (``create_ticket`` in ``tickets-create_ticket``) is taken as that tool's in any case, so a
    definition older than every retained discovery still reads as changed. Of several servers
    listing the name, those whose definition it carries are chosen, else all of them (a changed
    definition of a tool of ambiguous origin is stale against each).
    """

    def __init__(self, servers: Mapping[K, Sequence[Mapping[str, ToolForm]]]) -> None:
        self._servers = servers
        self._names: dict[str, list[tuple[K, str]]] = {}
        for key, discoveries in servers.items():
            for name in {n for discovery in discoveries for n in discovery}:
                for alias in {name, _sanitised(name)}:
                    self._names.setdefault(alias, []).append((key, name))
        #: No suffix longer than the longest known name can be one (bounds the suffixes tried).
        self._longest = max(map(len, self._names), default=0)

    def map(self, offered: Sequence[OfferedTool]) -> dict[K, dict[str, ToolForm]]:
        """Per server, the MCP tools ``offered`` maps to, with the offered form of each."""
        mapped: dict[K, dict[str, ToolForm]] = {}
        for tool in offered:
            if not tool.name:
                continue
            form = offered_form(tool)
            for key, name in self._resolve(tool.name, form):
                mapped.setdefault(key, {})[name] = form
        return mapped

    def _resolve(self, offered_name: str, form: ToolForm) -> list[tuple[K, str]]:
        exact = self._names.get(offered_name) or self._names.get(_sanitised(offered_name))
        if exact:
            carried = [c for c in exact if self._carries(c, form)]
            return carried or list(exact)
        for suffix in _suffixes(offered_name, self._longest):
            found = self._names.get(suffix)
            if found:
                carried = [c for c in found if self._carries(c, form)]
                # a compound name (``create_ticket``) after a prefix is the MCP tool's even when
                # its definition is older than every retained discovery; a one-word one
                # (``answer`` in ``final_answer``) only with a definition the server listed
                return carried or (list(found) if _compound(suffix) else [])
        return []

    def _carries(self, candidate: tuple[K, str], form: ToolForm) -> bool:
        key, name = candidate
        return any(
            name in discovery and same_form(form, discovery[name])
            for discovery in self._servers[key]
        )


def offered_as(offered_name: str, mcp_name: str) -> bool:
    """Whether a name a model was offered (and calls by) can be the MCP tool ``mcp_name``: the
    same name, its sanitised form, or either after a framework's prefix and a separator."""
    # linear in the name (a model's answer may name anything): a suffix after a separator is
    # the name's end preceded by a separator, never a copy of every suffix
    for target in {mcp_name, _sanitised(mcp_name)}:
        if offered_name == target:
            return True
        cut = len(offered_name) - len(target) - 1
        if (
            target
            and cut >= 0
            and offered_name[cut] in _SEPARATORS
            and offered_name.endswith(target)
        ):
            return True
    return False


def compare_offered(
    offered: Mapping[str, ToolForm],
    discoveries: Sequence[Mapping[str, ToolForm]],
    *,
    discovery_digest: str | None,
) -> InstallCheck:
    """What a model was offered of one server compared with that server's retained complete
    discoveries (oldest first, the latest last; at least one): tool by tool against the latest
    (a subset of equal definitions matches, docs/model.md#installed-subsets), and whether it is
    exactly an earlier discovery's whole catalog instead (docs/model.md#agents)."""
    latest = discoveries[-1]
    changed: list[str] = []
    members: set[str] = set()
    for name, form in offered.items():
        if name in latest:
            differs = form_differences(form, latest[name])
            if differs:
                changed.append(name)
                members.update(differs)
    unlisted = sorted(name for name in offered if name not in latest)
    earlier = not _is_catalog(offered, latest) and any(
        _is_catalog(offered, discovery) for discovery in discoveries[:-1]
    )
    return InstallCheck(
        installed=len(offered),
        discovered=len(latest),
        changed=tuple(sorted(changed)),
        unlisted=tuple(unlisted),
        discovery_digest=discovery_digest,
        changed_members=tuple(sorted(members)),
        earlier_catalog=earlier,
    )


def _is_catalog(offered: Mapping[str, ToolForm], discovery: Mapping[str, ToolForm]) -> bool:
    """Whether ``offered`` is exactly ``discovery``'s whole catalog."""
    return offered.keys() == discovery.keys() and all(
        same_form(form, discovery[name]) for name, form in offered.items()
    )


# -- names ------------------------------------------------------------------------------------
def _compound(name: str) -> bool:
    """Whether ``name`` joins words with a separator (``create_ticket``, ``get-weather``)."""
    return any(char in _SEPARATORS for char in name.strip("".join(_SEPARATORS)))


def _sanitised(name: str) -> str:
    return _UNSAFE_NAME.sub("_", name)[:_NAME_LIMIT]


def _suffixes(name: str, longest: int) -> list[str]:
    """What follows each separator of ``name``, longest first, none longer than ``longest``."""
    start = max(len(name) - longest - 1, 0)
    return [name[i + 1 :] for i in range(start, len(name) - 1) if name[i] in _SEPARATORS]


# -- descriptions -----------------------------------------------------------------------------
def _same_description(offered: ToolForm, discovered: ToolForm) -> bool:
    if discovered.description_length == 0 or offered.description_length == 0:
        return True  # a framework that drops descriptions, or fills in one the tool lacks
    if offered.description_digest == discovered.description_digest:
        return True
    text = offered.description_head
    marked = text.endswith(("...", "…"))  # said to be cut short
    head = text.removesuffix("...").removesuffix("…").rstrip() if marked else text
    shortened = len(head) >= (MIN_SHORTENED if marked else MIN_CUT)
    return (
        shortened
        and offered.description_length < discovered.description_length
        and discovered.description_head.startswith(head)
    )


# -- forms ------------------------------------------------------------------------------------
def _form(description: str | None, schema: Any) -> ToolForm:
    text = " ".join(description.split()) if description else ""
    return ToolForm(
        description_head=text[:DESCRIPTION_HEAD],
        description_digest=_sha(text),
        description_length=len(text),
        schema=_sha(_canonical(reduced_schema(schema))),
    )


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


__all__ = [
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "OfferedTool",
    "ToolForm",
    "ToolIndex",
    "compare_offered",
    "form_differences",
    "offered_as",
    "offered_form",
    "reduced_schema",
    "same_form",
    "tool_form",
]
