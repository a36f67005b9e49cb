"""Installs per agent, read from the model's own request (docs/model.md#agents).

An agent is one model's set of offered tools. Each request an LLM client sends carries the tool
definitions its model may call; the LLM-client hooks (:mod:`otel_mcp_health.model_requests`)
hand them to :func:`record_model_request`, which maps them back to the MCP tools they came from
(:class:`~otel_mcp_health.core.offered.ToolIndex` over the tool forms of each server's retained
discoveries, :mod:`._servers`) and keeps an immutable :class:`Snapshot` of the result: per
server, the offered form of each MCP tool. Offered tools that map to no MCP tool are the
application's own and are ignored; a request offering no MCP tool records nothing.

The tie: the snapshot is set in a context variable. A ``tools/call`` of a tool it offered, running
in that context or in a task or thread started from it after the request, is the call of that agent
(:func:`._agent_calls.call_attributes`: ``mcp_health.agent.tied = true``). The next request in the
same context is the same agent again: it keeps its label and replaces its snapshot. A call outside
any agent's context is untied and judged against every agent whose latest snapshot offers the called
tool of its server: the span carries the first of them (in label order) whose offer does not match
the server's latest discovery, else one whose offer does, so the call is converged only if every one
of them is.

Bounded: labels are ``<api>/<slot>`` with a small reused slot; at most
:data:`~otel_mcp_health.core.bounds.MAX_AGENTS` agents and :data:`MAX_BYTES` of their snapshots
(an estimate: names, forms, server keys) are kept, the least recently requesting forgotten
first; a single request whose snapshot would exceed :data:`MAX_SNAPSHOT_BYTES` records nothing.
Nothing here is exported but labels, counts, a digest and capped tool and member names.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_mcp_health import _codec
from otel_mcp_health.core.bounds import MAX_AGENTS, cap
from otel_mcp_health.core.evidence import InstallCheck
from otel_mcp_health.core.offered import (
    OfferedTool,
    ToolForm,
    ToolIndex,
    compare_offered,
    offered_as,
)
from otel_mcp_health.core.server import CatalogKey
from otel_mcp_health.instrumentation import _servers, _state
from otel_mcp_health.instrumentation._answers import ANSWERS, arguments_digest
from otel_mcp_health.instrumentation._servers import Discovered, form_bytes

_logger = logging.getLogger(__name__)

#: Bytes the agents' snapshots may take at once, and one snapshot at most (an estimate).
MAX_BYTES: Final = 8 * 1024 * 1024
MAX_SNAPSHOT_BYTES: Final = 1024 * 1024
#: Estimated bytes of a snapshot's and of one server entry's fixed parts.
_SNAPSHOT_BYTES: Final = 600
_SERVER_BYTES: Final = 300
#: Servers whose comparison one snapshot memoizes at once.
_MAX_MEMO: Final = 8
#: The longest tool name an answer's call is kept for (the longest name a request's offered tools
#: are read for: a longer one names no offered tool).
_MAX_ANSWERED_NAME: Final = 1024
#: Longest API name in a label (the hooks pass a fixed vocabulary; bounded all the same).
_MAX_API_LENGTH: Final = 32

#: Per server, the offered form of each MCP tool the request mapped to (read-only).
Offered = Mapping[CatalogKey, Mapping[str, ToolForm]]


@dataclass(frozen=True, slots=True, eq=False)
class Snapshot:
    """What one model request of an agent offered, mapped per server (in memory only)."""

    label: str
    api: str
    #: The agent's identity: the same object for every snapshot of one agent.
    agent: object
    offered: Offered
    size: int
    #: The registry generation it was made in (a snapshot of an earlier instrumentation
    #: is never used).
    generation: int
    #: The task (or thread) that made the request: a request in another task is another agent,
    #: even when that task started from this agent's context (a sub-agent under ``gather``).
    runner: int = 0
    #: Per server, the last discovery it was compared with, the result and its span
    #: attributes, tied and untied (a memo: the comparison and encoding run once per discovery).
    _checks: dict[CatalogKey, tuple[Discovered, InstallCheck, dict[bool, dict[str, Any]]]] = field(
        default_factory=dict, repr=False
    )

    def check(self, server: CatalogKey, found: Discovered) -> InstallCheck:
        """What it offered from ``server`` compared with ``found``'s retained discoveries."""
        return self._memo(server, found)[1]

    def attributes(self, server: CatalogKey, found: Discovered, *, tied: bool) -> dict[str, Any]:
        """:meth:`check` as a call span's attributes (shared and read-only: copy to change)."""
        encoded = self._memo(server, found)
        attrs = encoded[2].get(tied)
        if attrs is None:
            attrs = encoded[2][tied] = _codec.encode_offered(
                self.label, tied=tied, check=encoded[1]
            )
        return attrs

    def _memo(
        self, server: CatalogKey, found: Discovered
    ) -> tuple[Discovered, InstallCheck, dict[bool, dict[str, Any]]]:
        memo = self._checks.get(server)
        if memo is None or memo[0] is not found:
            forms = self.offered[server]
            check = compare_offered(forms, found.forms, discovery_digest=found.digest)
            if len(self._checks) >= _MAX_MEMO:
                self._checks.clear()  # it keeps discoveries alive: a few only
            memo = self._checks[server] = (found, check, {})
        return memo


def _runner() -> int:
    """The identity of the asyncio task running now, else of the current thread."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running event loop: a thread's synchronous code
        task = None
    return id(task) if task is not None else threading.get_ident()


class Agents:
    """The process's agents: each label's latest snapshot, LRU-bounded by count and bytes."""

    def __init__(self, max_agents: int = MAX_AGENTS, max_bytes: int = MAX_BYTES) -> None:
        self._latest: OrderedDict[str, Snapshot] = OrderedDict()
        self._slots: dict[str, set[int]] = {}
        self._max_agents = max_agents
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()
        self.generation = 0
        #: Whether any agent is held: the one check a ``tools/call`` pays when none ever was.
        self.active = False

    def __len__(self) -> int:
        return len(self._latest)

    @property
    def held_bytes(self) -> int:
        """The estimated bytes of the snapshots held."""
        return self._bytes

    def record(self, api: str, previous: Snapshot | None, offered: Offered, size: int) -> Snapshot:
        """The agent of ``previous`` (the context's snapshot) requested again, or a new agent of
        ``api`` when there is none, it was another API's, made in another task or thread, or
        forgotten: its new snapshot."""
        runner = _runner()
        with self._lock:
            same = (
                previous is not None
                and previous.api == api
                and previous.generation == self.generation
                and previous.runner == runner
                and (held := self._latest.get(previous.label)) is not None
                and held.agent is previous.agent
            )
            if same and previous is not None:
                label, agent = previous.label, previous.agent
                self._bytes -= self._latest.pop(label).size
            else:
                while self._latest and len(self._latest) >= self._max_agents:
                    self._forget(next(iter(self._latest)))  # its slot is free for this one
                label, agent = self._new_label(api), object()
            snapshot = Snapshot(label, api, agent, offered, size, self.generation, runner)
            self._latest[label] = snapshot
            self._bytes += size
            while len(self._latest) > self._max_agents or self._bytes > self._max_bytes:
                self._forget(next(iter(self._latest)))
            self.active = bool(self._latest)
            return snapshot

    def _new_label(self, api: str) -> str:
        """``<api>/<slot>``: the smallest slot of ``api`` no held agent uses."""
        used = self._slots.setdefault(api, set())
        slot = next(n for n in range(len(used) + 1) if n not in used)
        used.add(slot)
        return f"{api}/{slot}"

    def _forget(self, label: str) -> None:
        snapshot = self._latest.pop(label)
        self._bytes -= snapshot.size
        used = self._slots.get(snapshot.api)
        if used is not None:
            used.discard(int(label.rsplit("/", 1)[1]))
            if not used:
                del self._slots[snapshot.api]

    def offering(self, server: CatalogKey, tool: str) -> list[Snapshot]:
        """The agents whose latest snapshot offers ``tool`` of ``server``, in label order."""
        with self._lock:
            found = [s for s in self._latest.values() if tool in s.offered.get(server, ())]
        return sorted(found, key=lambda s: s.label)

    def current(self, snapshot: Snapshot | None) -> bool:
        """Whether ``snapshot`` was made since the last :meth:`clear`."""
        return snapshot is not None and snapshot.generation == self.generation

    def clear(self) -> None:
        with self._lock:
            self._latest.clear()
            self._slots.clear()
            self._bytes = 0
            self.generation += 1
            self.active = False


#: The process's agents (cleared by ``uninstrument``).
AGENTS: Final = Agents()
#: The snapshot of the latest model request made in this context (the tie).
AGENT: ContextVar[Snapshot | None] = ContextVar("otel_mcp_health_agent", default=None)


class _Index:
    """The index of the servers' retained forms, rebuilt only when a discovery completed since
    it was built (:attr:`_servers.ServerDiscoveries.version`)."""

    def __init__(self) -> None:
        self._built: tuple[int, ToolIndex[CatalogKey]] | None = None
        self._lock = threading.Lock()

    def current(self) -> ToolIndex[CatalogKey] | None:
        """The index of every server's retained forms now (``None``: no server has any)."""
        version = _servers.SERVERS.version
        built = self._built
        if built is not None and built[0] == version:
            return built[1]
        with self._lock:
            built = self._built
            if built is not None and built[0] == version:
                return built[1]
            servers = _servers.SERVERS.all_forms()
            if not servers:
                return None
            index = ToolIndex(servers)
            self._built = (version, index)
            return index

    def clear(self) -> None:
        with self._lock:
            self._built = None


INDEX: Final = _Index()


def record_model_request(api: str, tools: Sequence[OfferedTool]) -> None:
    """Record that a model request of ``api`` offered ``tools`` (docs/model.md#agents): the
    agent of this context's snapshot. Never raises; nothing when the instrumentation is off."""
    if _state.TELEMETRY is None or not is_instrumentation_enabled():
        return
    try:
        _record(api, tools)
    except Exception:
        _logger.debug("mcp_health: a model request was not recorded", exc_info=True)


def _record(api: object, tools: Iterable[object]) -> None:
    """The hooks' values are checked here: a caller's mistake is ignored, never trusted."""
    offered = [tool for tool in list(tools) if isinstance(tool, OfferedTool)]
    if not offered:
        return
    index = INDEX.current()
    if index is None:
        return
    mapped = {server: forms for server, forms in index.map(offered).items() if forms}
    if not mapped:
        return  # only the application's own tools
    size = _SNAPSHOT_BYTES
    for server, forms in mapped.items():
        size += _SERVER_BYTES + server.size()
        size += sum(len(name) + form_bytes(form) for name, form in forms.items())
    if size > MAX_SNAPSHOT_BYTES:
        _logger.debug("mcp_health: a model request offered more than an agent may keep")
        return
    frozen = MappingProxyType(
        {server: MappingProxyType(dict(forms)) for server, forms in mapped.items()}
    )
    name = cap(api if isinstance(api, str) else "unknown", _MAX_API_LENGTH)
    AGENT.set(AGENTS.record(name, AGENT.get(), frozen, size))


def answer_recorder() -> Callable[[Iterable[tuple[str, Any]]], None] | None:
    """What records the tool calls (the name the model used, its arguments) of the answer to
    this context's latest model request (:mod:`._answers`: the tie of a call made in another
    task), bound to that request now, so a stream read later elsewhere still records for it;
    ``None`` when the instrumentation is off or no request was recorded here. The recorder
    never raises."""
    if _state.TELEMETRY is None or not is_instrumentation_enabled():
        return None
    snapshot = AGENT.get()
    if snapshot is None or not AGENTS.current(snapshot):
        return None

    def record(calls: Iterable[tuple[str, Any]]) -> None:
        try:
            # only a call of an MCP tool the request offered can be claimed by a tools/call:
            # the application's own tools (and names longer than any request may offer) are
            # not kept, nor the snapshot they would hold outside the agents' byte bound
            offered = {tool for forms in snapshot.offered.values() for tool in forms}
            asked = [
                (name, arguments_digest(arguments))
                for name, arguments in calls
                if 0 < len(name) <= _MAX_ANSWERED_NAME
                and any(offered_as(name, tool) for tool in offered)
            ]
            if asked:
                ANSWERS.remember(snapshot, asked)
        except Exception:
            _logger.debug("mcp_health: a model answer was not recorded", exc_info=True)

    return record


def reset() -> None:
    """Forget every agent, their pending answers and the index (``uninstrument``)."""
    AGENTS.clear()
    ANSWERS.clear()
    INDEX.clear()


__all__ = ["AGENT", "AGENTS", "answer_recorder", "record_model_request"]
