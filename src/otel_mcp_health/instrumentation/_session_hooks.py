"""Hooks of a client session's life: registration (and which transport it talks), clock, end.

A hook module (the seam's contract: :data:`._compat.HOOK_MODULES`). What these hooks record
belongs to the session, not to one request: its key, transport and clock. Each transport's home
tells whether a new session is its own (:mod:`._stdio`, :mod:`._sse`, :mod:`._in_process`;
streamable HTTP learns it at the first POST, :mod:`._streamable_http`); the server's messages and
the channel that carries them: :mod:`._notifications`.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

from opentelemetry.trace import SpanKind

from otel_mcp_health import attributes as A
from otel_mcp_health.core.failures import leaf
from otel_mcp_health.instrumentation import _in_process, _sse, _state, _stdio
from otel_mcp_health.instrumentation._sdk import error_type_of
from otel_mcp_health.instrumentation._state import SessionState, Telemetry


def register_session(session: Any) -> None:
    """Give a new ``ClientSession`` its state (random key) and learn its transport where the
    session's own streams tell it (stdio, SSE, in-process)."""
    # mcp 1.x has no dispatcher: the session sends its requests itself.
    dispatcher = getattr(session, "_dispatcher", session)
    state = SessionState(session_ref=weakref.ref(session), by_wire_id=dispatcher is session)
    _state.SESSIONS[session] = state
    _state.DISPATCHERS[dispatcher] = state
    # The stream the transport answers into (2.x: behind the dispatcher's context wrapper).
    read_stream = getattr(dispatcher, "_read_stream", None)
    inbound = getattr(getattr(read_stream, "_inner", read_stream), "_state", None)
    if inbound is not None:
        _state.INBOUND_STREAMS[inbound] = state
    # The transport is the one whose own write stream the session writes into.
    if not _stdio.learn_pipe(state, dispatcher) and not _sse.learn_sse(state, dispatcher):
        _in_process.learn_in_process(state, dispatcher)


def session_started(session: Any) -> None:
    """``ClientSession.__aenter__`` ran: the session clock starts."""
    state = _state.SESSIONS.get(session)
    if state is not None:
        state.started_ns = time.perf_counter_ns()


def session_ended(telemetry: Telemetry, session: Any, exc: BaseException | None) -> None:
    """``ClientSession.__aexit__`` ran: record ``mcp.client.session.duration``."""
    state = _state.SESSIONS.get(session)
    if state is None:
        return
    state.release_probe(superseded=False)  # no fallback came: judged as it is
    if state.started_ns is None:
        return
    elapsed = (time.perf_counter_ns() - state.started_ns) / 1e9
    state.started_ns = None
    attrs = dict(state.connection_attributes())
    if exc is not None:
        attrs[A.ERROR_TYPE] = error_type_of(leaf(exc))
    telemetry.session_duration.record(elapsed, telemetry.session_labels.apply(attrs))
    # Tells the span processor to release this session's state now, not at idle expiry.
    end = {A.SESSION_KEY: state.key}
    telemetry.tracer.start_span(
        A.SESSION_END_SPAN_NAME, kind=SpanKind.INTERNAL, attributes=end
    ).end()
