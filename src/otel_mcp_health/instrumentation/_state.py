"""In-memory state of the instrumentation (private).

Three kinds of state, all process-local and never exported as such:

* :class:`Telemetry` -- the tracer, histograms and settings of the current ``instrument()`` call;
  ``None`` while uninstrumented. Wrappers read it once per call, so ``uninstrument()`` turns every
  installed hook into a pass-through even for sessions that are already open.
* :class:`SessionState` -- one per client session, keyed weakly by the ``ClientSession`` *and* by
  its dispatcher (the only objects every hook can reach). Holds the random session key, transport
  identity, the negotiated version, the running ``tools/list`` traversals and the tools of the last
  complete application discovery (for the call-time contract check, docs/model.md#catalog).
* Per-request records, handed between nested hooks through context variables:
  :class:`RequestRecord` (one per JSON-RPC request, owns the one CLIENT span and keeps the facts
  its hooks saw, folded into the evidence written on it when the request ends) and :class:`Slot`
  (an outer wrapper -- ``call_tool`` or ``send_request`` -- that keeps the span open until it has
  seen what happens *after* the dispatcher returned: result validation, output-schema check).
"""

from __future__ import annotations

import secrets
import time
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry.metrics import Histogram
from opentelemetry.trace import Span, Tracer

from otel_mcp_health import attributes as A
from otel_mcp_health._codec import (
    Connection,
    encode_clocks,
    encode_connection,
    encode_superseded,
)
from otel_mcp_health._sdkspan import StartWrites
from otel_mcp_health.core.bounds import LabelBudget
from otel_mcp_health.core.facts import Fact
from otel_mcp_health.core.fold import Records, records
from otel_mcp_health.core.observations import Observed
from otel_mcp_health.core.server import CatalogKey, ServerIdentity, ServerLabel
from otel_mcp_health.instrumentation import _targets
from otel_mcp_health.instrumentation._keyed import KeyedHash

if TYPE_CHECKING:  # a session holds its discovery; the registry of them imports this module
    from otel_mcp_health.instrumentation._approval import Pins
    from otel_mcp_health.instrumentation._call_checks import CallPlans
    from otel_mcp_health.instrumentation._servers import Discovered
    from otel_mcp_health.instrumentation._traversals import Traversal

#: The keyed hash of :func:`cursor_hash` (its own per-process key).
_CURSORS = KeyedHash()


def cursor_hash(cursor: str) -> str:
    """Keyed hash of an opaque pagination cursor (HMAC-SHA256, 16 hex digits); never the cursor."""
    return _CURSORS.hexdigest(cursor)[:16]


#: Duration label sets a session keeps (distinct method, tool and error type combinations).
_MAX_LABEL_SETS = 256
#: ``tools/call`` span heads a session keeps (distinct tools and clocks); when full it starts
#: afresh (a head is rebuilt from the same inputs).
_MAX_HEADS = 256
#: Open labels of the duration histograms: the common ones (:data:`A.OPEN_LABELS`), the server
#: name (with address and port, the server's exported label; the processor's counters carry it
#: too, ``processor.metrics.OPEN_LABELS``), and the two only these carry: ``error.type`` (an
#: exception's class name can be anything) and the negotiated protocol version. Their order does
#: not matter: each is bounded on its own.
OPEN_LABELS = (*A.OPEN_LABELS, A.SERVER_NAME, A.ERROR_TYPE, A.MCP_PROTOCOL_VERSION)


@dataclass(slots=True, kw_only=True)
class Telemetry:
    """What ``McpHealthInstrumentor.instrument()`` configured."""

    tracer: Tracer
    operation_duration: Histogram
    session_duration: Histogram
    idle_window_s: float
    digests: bool
    max_pages: int
    #: Open labels of the two histograms, bounded in their distinct values.
    operation_labels: LabelBudget = field(default_factory=lambda: LabelBudget(OPEN_LABELS))
    session_labels: LabelBudget = field(default_factory=lambda: LabelBudget(OPEN_LABELS))
    #: Evidence the installed SDK cannot give (a private hook is absent; ``_compat``).
    missing_evidence: tuple[str, ...] = ()
    #: The approved catalog discoveries are judged with (``None``: none configured).
    pins: Pins | None = None
    #: Whether the tracer's request spans may start without attributes and get them written
    #: right after (decided at the first request, kept: ``_sdkspan.StartWrites``).
    start_writes: StartWrites | None = None


#: Set by ``_instrument``, cleared by ``_uninstrument``.
TELEMETRY: Telemetry | None = None


@dataclass(slots=True, eq=False, kw_only=True)
class SessionState:
    """Everything the instrumentation remembers about one client session."""

    key: str = field(default_factory=lambda: secrets.token_hex(8))
    session_ref: weakref.ref[Any] | None = None
    network_transport: str | None = None
    server_address: str | None = None
    server_port: int | None = None
    session_id: str | None = None
    protocol_version: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    #: :func:`target_key` of the session's transport target (``None`` until known: read it
    #: through :meth:`server_target`).
    target_key: str | None = None
    #: In-process: the shared state of the session's write stream, until the server that reads
    #: it is known (it starts after the session exists: :data:`._targets.IN_PROCESS_STREAMS`).
    pending_stream: weakref.ref[Any] | None = None
    #: Where the session hears ``list_changed`` (:mod:`._notifications`): its own stream unless
    #: it talks streamable HTTP (its GET stream).
    notification_channel: str = A.CHANNEL_SESSION
    started_ns: int | None = None
    #: Its open application ``tools/list`` traversals, oldest first (a bounded few:
    #: :func:`._traversals.open_traversal`).
    traversals: list[Traversal] = field(default_factory=list)
    #: The session's own last complete application discovery (``_servers.discovered`` falls
    #: back on its server's).
    discovered: Discovered | None = None
    #: A ``server/discover`` probe answered with an error, and when it ended (``time_ns``): its
    #: span waits for the session's next request, which tells whether a fallback superseded it
    #: (:meth:`release_probe`).
    held_probe: tuple[RequestRecord, int] | None = None
    #: ``tools/call`` requests whose span is still open (weakly held: never keeps one alive).
    open_calls: weakref.WeakSet[RequestRecord] = field(default_factory=weakref.WeakSet)
    #: mcp 1.x: open requests by JSON-RPC id, for the transport hooks that run outside the
    #: request's context (the 1.x transports carry no context with a message). Kept only for
    #: a 1.x session (``by_wire_id``): 2.x hooks find a request through its context.
    by_wire_id: bool = False
    wire_requests: weakref.WeakValueDictionary[str, RequestRecord] = field(
        default_factory=weakref.WeakValueDictionary
    )
    #: What :meth:`connection_attributes` and :meth:`start_attributes` were built from, and
    #: what they built: rebuilt only when the version, transport or session id changed.
    _built_from: tuple[Any, ...] | None = field(default=None, init=False, repr=False)
    _connection: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    _start: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    #: Bounded duration labels by (budget, method, tool, error type), with the same lifetime.
    _labels: dict[tuple[Any, ...], dict[str, Any]] = field(
        default_factory=dict, init=False, repr=False
    )
    #: The first attributes of a ``tools/call`` span by (tool, idle window, deadline), with the
    #: same lifetime (:meth:`call_start`).
    _heads: dict[tuple[Any, ...], dict[str, Any]] = field(
        default_factory=dict, init=False, repr=False
    )
    #: The call plans of the discovery its calls were last judged on (:mod:`._call_checks`).
    call_plans: CallPlans | None = field(default=None, repr=False)

    def connection_attributes(self) -> dict[str, Any]:
        """Version, transport and server identity: on every span and duration of the session.

        Shared and read-only: copy before adding to it.
        """
        self._refresh()
        return self._connection

    def start_attributes(self) -> dict[str, Any]:
        """The session's part of every request span's start attributes (shared, read-only)."""
        self._refresh()
        return self._start

    def operation_labels(
        self, budget: LabelBudget, method: str, tool: str | None, error_type: str | None
    ) -> dict[str, Any]:
        """The bounded labels of one request's duration (shared, read-only). Kept: once the
        budget admitted or folded a value, it answers the same for it ever after."""
        self._refresh()
        key = (budget, method, tool, error_type)
        labels = self._labels.get(key)
        if labels is None:
            metric = {A.MCP_METHOD_NAME: method, **self._connection}
            if error_type is not None:
                metric[A.ERROR_TYPE] = error_type
            if tool is not None:
                metric[A.GEN_AI_TOOL_NAME] = tool
                metric[A.GEN_AI_OPERATION_NAME] = A.GEN_AI_OPERATION_EXECUTE_TOOL
            labels = budget.apply(metric)
            if len(self._labels) < _MAX_LABEL_SETS:
                self._labels[key] = labels
        return labels

    def call_start(
        self, tool: str, idle_window_s: float | None, deadline_s: float | None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The session's start attributes (:meth:`start_attributes`) and, built once per session
        state, tool and clocks, the first attributes of a ``tools/call`` span: method, the
        session's, tool and operation names, clocks (both shared and read-only)."""
        self._refresh()
        key = (tool, idle_window_s, deadline_s)
        head = self._heads.get(key)
        if head is None:
            head = {A.MCP_METHOD_NAME: "tools/call", **self._start}
            head[A.GEN_AI_TOOL_NAME] = tool
            head[A.GEN_AI_OPERATION_NAME] = A.GEN_AI_OPERATION_EXECUTE_TOOL
            head.update(encode_clocks(idle_window_s, deadline_s))
            if len(self._heads) >= _MAX_HEADS:
                self._heads.clear()
            self._heads[key] = head
        return self._start, head

    def _refresh(self) -> None:
        version = self.current_protocol_version()
        target = self.server_target()
        built_from = (
            version,
            self.network_transport,
            self.server_port,
            self.session_id,
            target,
            self.server_name,
        )
        if built_from == self._built_from:
            return
        connection = Connection(
            protocol_version=version,
            network_transport=self.network_transport,
            server_address=self.server_address,
            server_port=self.server_port,
        )
        self._connection = encode_connection(connection)
        # The server's exported label: address and port (above) and the handshake's name.
        if self.server_name is not None:
            self._connection[A.SERVER_NAME] = self.server_name
        start = {A.SESSION_KEY: self.key, **self._connection}
        if target is not None:
            start[A.SERVER_TARGET_KEY] = target
        if self.network_transport == "tcp":
            start[A.NETWORK_PROTOCOL_NAME] = "http"
        if self.session_id is not None:
            start[A.MCP_SESSION_ID] = self.session_id
        self._start, self._built_from = start, built_from
        self._labels, self._heads = {}, {}

    def current_protocol_version(self) -> str | None:
        """The negotiated version: the session's own view first, then what the handshake said."""
        session = self.session_ref() if self.session_ref is not None else None
        version = getattr(session, "protocol_version", None)
        return version if isinstance(version, str) else self.protocol_version

    def server_target(self) -> str | None:
        """The session's :attr:`target_key`, learned now if it is an in-process session whose
        server has started reading its write stream."""
        pending = self.pending_stream
        if self.target_key is None and pending is not None:
            stream = pending()
            target = _targets.IN_PROCESS_STREAMS.get(stream) if stream is not None else None
            if target is not None:
                self.target_key = _targets.target_key(target)
            if target is not None or stream is None:
                self.pending_stream = None
        return self.target_key

    def server_identity(self) -> ServerIdentity:
        """This session's server as far as it is known (docs/model.md#scope): its catalog key is
        ``None`` until a target key, name or version is."""
        target, name, version = self.server_target(), self.server_name, self.server_version
        named = target is not None or name is not None or version is not None
        catalog = CatalogKey(target, name, version) if named else None
        return ServerIdentity(
            target, ServerLabel(name, self.server_address, self.server_port), catalog
        )

    def release_probe(self, *, superseded: bool) -> None:
        """End the held probe's span at the time it ended; ``superseded``: the session's fallback
        handshake (``initialize`` or a re-probe) followed, so the attempt is judged on that one."""
        held, self.held_probe = self.held_probe, None
        if held is None:
            return
        record, ended_ns = held
        if superseded:
            record.span.set_attributes(encode_superseded())
        record.span.end(end_time=ended_ns)


#: Client dispatcher -> state. Server-side dispatchers are never in here, which is how every
#: dispatcher hook tells a client request from a server-initiated one in the same process.
DISPATCHERS: weakref.WeakKeyDictionary[Any, SessionState] = weakref.WeakKeyDictionary()
#: ClientSession -> state (same object as its dispatcher's).
SESSIONS: weakref.WeakKeyDictionary[Any, SessionState] = weakref.WeakKeyDictionary()
#: mcp 1.x: the shared state of a session's inbound memory stream -> the session's state. The
#: streamable HTTP transport writes responses into that stream, so its request hooks find the
#: session through it.
INBOUND_STREAMS: weakref.WeakKeyDictionary[Any, SessionState] = weakref.WeakKeyDictionary()


def session_state(target: Any) -> SessionState | None:
    """The state of a ``ClientSession``, or of an object with a ``.session`` (``mcp.Client``)."""
    if isinstance(target, SessionState):
        return target
    for candidate in (target, getattr(target, "session", None)):
        try:
            state = SESSIONS.get(candidate)
        except TypeError:  # unhashable (e.g. the ``mcp.Client`` dataclass): not a session
            continue
        if state is not None:
            return state
    return None


@dataclass(slots=True, weakref_slot=True, eq=False, kw_only=True)
class RequestRecord:
    """One outbound JSON-RPC request: what was known before it was sent, the facts its hooks saw
    (:mod:`otel_mcp_health.core.facts`, folded into its evidence once, when it ends) and what
    only the shell holds (span, session, clocks, params)."""

    state: SessionState
    span: Span
    method: str
    tool_name: str | None = None
    #: The tool's ``readOnlyHint`` at call time (last complete discovery).
    read_only: bool | None = None
    #: Evidence this request lacks beyond what the SDK in use cannot give (a call whose server's
    #: discovery was forgotten: ``_servers.forgotten``).
    missing: tuple[str, ...] = ()
    request_id: str | None = None
    facts: list[Fact] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    params: Any = None
    origin: str | None = None
    recording: bool = True
    #: The span belongs to an outer instrumentation of the same request: enrich, never end it.
    borrowed: bool = False
    #: The SDK's span block claimed our span (it is handed out once per request).
    sdk_span_entered: bool = False
    #: The request itself was seen going to the transport (later writes are not looked at).
    write_seen: bool = False
    ended: bool = False
    #: The session's start attributes the span started with (:meth:`SessionState.start_attributes`)
    #: and, when its POST learned the connection since, the ones it found then (written at the end).
    start_attributes: dict[str, Any] | None = None
    #: Every attribute the span started with (the session's and the method's).
    span_attributes: dict[str, Any] = field(default_factory=dict)
    post_attributes: dict[str, Any] | None = None
    #: An outcome verifier owns the span's end (``finish`` leaves it open and starts it).
    end_deferred: bool = False
    on_finished: Callable[[], None] | None = None

    def observe(self, fact: Fact) -> None:
        """Append what a hook saw; nothing is decided until the request ends."""
        self.facts.append(fact)

    def records(self, missing: tuple[str, ...] = (), *, identified: bool = True) -> Records:
        """The request's facts folded into its records (``core.fold.records``); without its
        JSON-RPC id when not ``identified`` (the same records for every request of its shape)."""
        seed = Observed(
            method=self.method,
            tool_name=self.tool_name,
            read_only=self.read_only,
            request_id=self.request_id if identified else None,
        )
        return records(seed, self.facts, network=self.state.network_transport, missing=missing)

    def shape(self, missing: tuple[str, ...]) -> tuple[Any, ...]:
        """All that its unidentified :meth:`records` depend on: the fold is pure and the facts
        are frozen, so requests of one shape get equal records (raises ``TypeError`` when a
        fact holds an unhashable value)."""
        key = (self.method, self.tool_name, self.read_only, self.state.network_transport, missing)
        return (*key, *self.facts)


@dataclass(slots=True, eq=False)
class Slot:
    """An outer wrapper's claim on the span of the next matching request it causes."""

    method: str | None
    record: RequestRecord | None = None
    #: Evidence known before the request exists (call-time contract check), put on its span.
    attributes: dict[str, Any] = field(default_factory=dict)
    #: The tool's ``readOnlyHint`` at call time, for the call's evidence record.
    read_only: bool | None = None
    #: Evidence the call-time check found missing, for the call's evidence record.
    missing: tuple[str, ...] = ()
    #: The call's arguments (a reference, never copied or exported) and their keyed digest,
    #: computed only when retry correlation needs it (in memory only).
    arguments: Any = None
    argument_digest: str | None = None
    #: The retry check ran (``call_tool`` knew the tool name).
    checked: bool = False


REQUEST: ContextVar[RequestRecord | None] = ContextVar("otel_mcp_health_request", default=None)
#: The session of the latest application ``tools/list`` in this context: an agent framework that
#: lists in a session of its own making (LangChain's default) installs the tools of that session.
LISTING: ContextVar[SessionState | None] = ContextVar("otel_mcp_health_listing", default=None)
SLOT: ContextVar[Slot | None] = ContextVar("otel_mcp_health_slot", default=None)
#: True inside ``call_tool``: a ``tools/list`` issued there is the SDK's own (output-schema
#: refresh, ``Client`` re-list), not an application discovery.
INTERNAL: ContextVar[bool] = ContextVar("otel_mcp_health_internal", default=False)
