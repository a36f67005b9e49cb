"""What the instrumentation remembers per server: its last complete discovery (private).

A catalog is the process's view of one server, not of one session (docs/model.md#scope): agent
frameworks list the tools in one session and call them in others (LangChain's
``MultiServerMCPClient.get_tools()``, llama-index's ``BasicMCPClient``: a fresh session per call).
A session that made no complete discovery of its own therefore gets its server's last one for the
call-time contract check (unknown tool, missing required argument names), the tool's
``readOnlyHint`` (outcome policies, silence) and the comparison of an install, exactly as if it
had listed the tools itself. The processor makes the same choice from spans
(``processor._servers``); both name a server by the catalog key of its identity
(:class:`~otel_mcp_health.core.server.CatalogKey`: target key, server name and version).

In memory only and bounded: at most :data:`MAX_SERVERS` servers and :data:`MAX_BYTES` of their
discoveries (tool names, required argument names, digests, the approval's tool names, the tool
forms of the last :data:`KEPT_DISCOVERIES` discoveries; least recently used forgotten first; a
discovery larger than the budget alone is kept by its own session only). A forgotten server is
remembered as such (its catalog key, the last :data:`MAX_FORGOTTEN`): a session of it that made
no discovery of its own would have its calls go unchecked, so they carry
``mcp_health.evidence.missing`` (``server_discovery``) and are never judged ``healthy``
(:func:`forgotten`).

The tool forms (:func:`otel_mcp_health.core.offered.tool_form`) of a server's last few complete
discoveries are what a model request is mapped back to and compared with (docs/model.md#agents):
a model offered an earlier catalog is recognized as such, not as an unknown one.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from otel_mcp_health.core.approval import Approval
from otel_mcp_health.core.bounds import MAX_SERVERS
from otel_mcp_health.core.catalog import required_properties
from otel_mcp_health.core.offered import ToolForm, tool_form
from otel_mcp_health.core.server import CatalogKey
from otel_mcp_health.instrumentation._state import SessionState

#: Bytes their discoveries may take at once (an estimate per entry, :func:`_size`).
MAX_BYTES: Final = 16 * 1024 * 1024
#: Forgotten servers remembered as forgotten (catalog keys only; their parts are capped).
MAX_FORGOTTEN: Final = MAX_SERVERS
#: Estimated bytes of an entry's and of one tool's fixed parts (objects, dict slots).
_ENTRY_BYTES: Final = 400
_TOOL_BYTES: Final = 300
#: Complete discoveries per server whose tool forms are kept (oldest first, the last included).
KEPT_DISCOVERIES: Final = 4

_logger = logging.getLogger(__name__)

#: Tool forms by MCP tool name, of one complete discovery.
Forms = Mapping[str, ToolForm]


@dataclass(slots=True, frozen=True)
class KnownTool:
    """What the call-time contract check needs from one discovered tool (names only)."""

    required: frozenset[str]
    read_only: bool | None


@dataclass(slots=True, frozen=True)
class Discovered:
    """The last complete application discovery of a session or of its server (in memory only):
    per tool what the call-time contract check needs, and the per-tool and catalog digests an
    install is compared with (``None`` when digests are off or the catalog has none)."""

    tools: dict[str, KnownTool]
    digests: dict[str, str] | None = None
    digest: str | None = None
    #: Its approval against the approved catalog (``None``: no approved catalog configured);
    #: a call of one of its tools is judged with it (docs/model.md#approval).
    approval: Approval | None = None
    #: The tool forms of the server's last :data:`KEPT_DISCOVERIES` complete discoveries, oldest
    #: first, this one last (empty when its forms could not be taken).
    forms: tuple[Forms, ...] = ()


class ServerDiscoveries:
    """Last complete discoveries by catalog key: LRU-bounded by count and by bytes."""

    def __init__(self, max_servers: int = MAX_SERVERS, max_bytes: int = MAX_BYTES) -> None:
        self._entries: OrderedDict[CatalogKey, tuple[Discovered, int]] = OrderedDict()
        self._max_servers = max_servers
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()
        #: Catalog keys whose discovery was forgotten (evicted, or alone over the budget),
        #: least recently forgotten first; a key remembered again leaves it.
        self._forgotten: OrderedDict[CatalogKey, None] = OrderedDict()
        #: Bumped when a server's retained forms change: what was derived from
        #: :meth:`all_forms` is current while it holds (a forgotten server may stay in it until
        #: then: it only maps requests to a server no call will be judged on).
        self.version = 0
        self._versions = itertools.count(1)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def held_bytes(self) -> int:
        """The estimated bytes of the discoveries held."""
        return self._bytes

    def remember(self, server: CatalogKey, discovered: Discovered) -> None:
        """``discovered`` is now the last complete discovery of ``server``."""
        size = _size(server, discovered)
        with self._lock:
            old = self._entries.pop(server, None)
            if old is not None:
                self._bytes -= old[1]
            self._forgotten.pop(server, None)
            if size > self._max_bytes:
                self._forget(server)
                return
            self._entries[server] = (discovered, size)
            self._bytes += size
            if old is None or old[0].forms is not discovered.forms:
                self.version = next(self._versions)
            while len(self._entries) > self._max_servers or self._bytes > self._max_bytes:
                evicted, (_, evicted_size) = self._entries.popitem(last=False)
                self._bytes -= evicted_size
                self._forget(evicted)

    def _forget(self, server: CatalogKey) -> None:
        """``server``'s discovery is no longer held (the lock is held)."""
        self._forgotten[server] = None
        while len(self._forgotten) > MAX_FORGOTTEN:
            self._forgotten.popitem(last=False)

    def forgot(self, server: CatalogKey) -> bool:
        """Whether the registry held a discovery of ``server`` and forgot it."""
        with self._lock:
            return server in self._forgotten

    def get(self, server: CatalogKey) -> Discovered | None:
        """The last complete discovery of ``server``, marked as used."""
        with self._lock:
            found = self._entries.get(server)
            if found is None:
                return None
            self._entries.move_to_end(server)
            return found[0]

    def all_forms(self) -> dict[CatalogKey, tuple[Forms, ...]]:
        """Per server its retained discoveries' tool forms (servers without any left out)."""
        with self._lock:
            return {key: entry[0].forms for key, entry in self._entries.items() if entry[0].forms}

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._forgotten.clear()
            self._bytes = 0
            self.version = next(self._versions)


#: The process's registry (cleared by ``uninstrument``).
SERVERS: Final = ServerDiscoveries()


def discovered(state: SessionState) -> Discovered | None:
    """What the session's calls and installs are checked against: its own last complete
    discovery, else its server's (docs/model.md#scope)."""
    if state.discovered is not None:
        return state.discovered
    server = state.server_identity().catalog
    return SERVERS.get(server) if server is not None else None


def forgotten(state: SessionState) -> bool:
    """Whether the session's calls lost what they would be checked against: it made no complete
    discovery of its own, and the registry forgot its server's (docs/model.md#scope)."""
    if state.discovered is not None:
        return False
    server = state.server_identity().catalog
    return server is not None and SERVERS.forgot(server)


def completed(
    state: SessionState,
    tools: Sequence[Mapping[str, Any]],
    digest: str | None,
    digests: dict[str, str] | None,
    approval: Approval | None = None,
) -> None:
    """An application traversal of the session completed with ``tools``, their catalog
    ``digest`` and per-tool ``digests`` (``None`` when digests are off or the catalog has none)
    and its ``approval``: the session's and its server's last discovery."""
    known = {tool["name"]: known_tool(tool) for tool in tools if isinstance(tool.get("name"), str)}
    kept = digests if digest is not None else None
    server = state.server_identity().catalog
    earlier = SERVERS.get(server) if server is not None else None
    forms = _forms(tools, kept, earlier)
    found = state.discovered = Discovered(known, kept, digest, approval, forms)
    if server is not None:
        SERVERS.remember(server, found)


def retaint(state: SessionState, found: Discovered, approval: Approval) -> None:
    """``found`` (the session's or its server's last discovery) now judged with ``approval``."""
    tainted = replace(found, approval=approval)
    if state.discovered is found:
        state.discovered = tainted
    server = state.server_identity().catalog
    if server is not None and SERVERS.get(server) is found:
        SERVERS.remember(server, tainted)


def known_tool(tool: Mapping[str, Any]) -> KnownTool:
    """What the call-time contract check needs of one tool: required names and ``readOnlyHint``."""
    annotations = tool.get("annotations")
    hint = annotations.get("readOnlyHint") if isinstance(annotations, Mapping) else None
    return KnownTool(
        required=frozenset(required_properties(tool)),
        read_only=hint if isinstance(hint, bool) else None,
    )


def _forms(
    tools: Sequence[Mapping[str, Any]], digests: dict[str, str] | None, earlier: Discovered | None
) -> tuple[Forms, ...]:
    """The earlier retained discoveries' forms and this one's, the last
    :data:`KEPT_DISCOVERIES` kept; none when this one's cannot be taken (the earlier ones
    alone would pass for the latest: no form is a guess).

    A tool whose per-tool digest equals the one it had in the ``earlier`` discovery keeps that
    discovery's form (equal digests, equal definitions): re-listing an unchanged catalog costs
    lookups, not a reduction per tool. An unchanged catalog is one retained discovery, not two.
    """
    retained = earlier.forms if earlier is not None else ()
    reusable: Forms = retained[-1] if retained else {}
    before = earlier.digests if earlier is not None and earlier.digests is not None else {}
    now = digests or {}
    try:
        latest: dict[str, ToolForm] = {}
        for tool in tools:
            name = tool.get("name")
            if not isinstance(name, str):
                continue
            digest = now.get(name)
            form = reusable.get(name) if digest is not None and before.get(name) == digest else None
            latest[name] = form if form is not None else tool_form(tool)
    except Exception:  # server-chosen definitions: never raise into the host
        _logger.debug("mcp_health: tool forms of a discovery not taken", exc_info=True)
        return ()
    if retained and retained[-1] == latest:
        return retained
    return (*retained, latest)[-KEPT_DISCOVERIES:]


def form_bytes(form: ToolForm) -> int:
    """An estimate of the bytes one tool form holds (its strings at one byte a character)."""
    size = _TOOL_BYTES
    for slot in getattr(type(form), "__slots__", ()):
        value = getattr(form, slot, None)
        if isinstance(value, str):
            size += len(value)
        elif isinstance(value, tuple):
            size += sum(len(v) + 60 for v in value if isinstance(v, str))
    return size


def _size(server: CatalogKey, found: Discovered) -> int:
    """An estimate of the bytes an entry holds (strings at one byte a character)."""
    size = _ENTRY_BYTES + server.size()
    for name, tool in found.tools.items():
        size += _TOOL_BYTES + len(name) + sum(len(r) + 60 for r in tool.required)
    if found.digests is not None:
        size += sum(len(name) + len(d) + 120 for name, d in found.digests.items())
    if found.approval is not None:
        size += sum(_TOOL_BYTES + len(change.name) for change in found.approval.changes)
    for forms in found.forms:
        size += sum(len(name) + form_bytes(form) for name, form in forms.items())
    return size
