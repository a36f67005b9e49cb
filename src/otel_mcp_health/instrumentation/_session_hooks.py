"""Hooks of a client session's life: registration, clock, end, notifications and the channel
that carries them, elicitation.

A hook module (the seam's contract: :data:`._shell.HOOK_MODULES`). What these hooks record
belongs to the session, not to one request: its key, transport, clock and server messages.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass
from types import FrameType
from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import SpanKind

from otel_mcp_health import attributes as A
from otel_mcp_health._codec import encode_channel, encode_waiting_for_user, present
from otel_mcp_health.core.failures import leaf
from otel_mcp_health.instrumentation import _state, _targets
from otel_mcp_health.instrumentation._sdk import error_type_of
from otel_mcp_health.instrumentation._state import RequestRecord, SessionState, Telemetry
from otel_mcp_health.instrumentation._streams import claim, stream_state


def register_session(session: Any) -> None:
    """Give a new ``ClientSession`` its state (random key) and learn a stdio transport."""
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
    if _state.STDIO_FRAMES:
        claim(_state.STDIO_FRAMES, _state.STDIO_STREAMS)
    written = stream_state(getattr(dispatcher, "_write_stream", None))
    line = _state.STDIO_STREAMS.get(written) if written is not None else None
    if line is not None:
        state.network_transport = "pipe"
        state.target_key = _targets.target_key(line)
    elif not _learn_sse(state, dispatcher):
        _learn_in_process(state, dispatcher)


def _learn_sse(state: SessionState, dispatcher: Any) -> bool:
    """A session over the write stream ``sse_client`` yielded talks SSE (docs/model.md#scope):
    its connecting GET named the server (``tcp``, address, port, target key), and its HTTP
    client's POSTs carry the session's requests."""
    _targets.claim_sse_frames()
    own = stream_state(getattr(dispatcher, "_write_stream", None))
    found = _targets.SSE_STREAMS.get(own) if own is not None else None
    if found is None:
        return False
    where, client = found
    state.network_transport, state.target_key = "tcp", where.target_key
    state.server_address, state.server_port = where.address, where.port
    _targets.SSE_CLIENTS[client] = state
    return True


def _learn_in_process(state: SessionState, dispatcher: Any) -> None:
    """A session with no transport of its own yet: an in-process server reading its write
    stream names it once that server runs (:func:`in_process_server`), and mcp 2.x's
    ``Client(server)`` names it at once (:func:`in_process_client`)."""
    written = stream_state(getattr(dispatcher, "_write_stream", None))
    if written is not None:
        state.pending_stream = weakref.ref(written)


def in_process_server(server: Any, read_stream: Any) -> None:
    """An in-process server (``Server.run``) reads its requests from ``read_stream``: the
    session that writes into it talks to that server object (docs/model.md#scope)."""
    target = _targets.in_process_target(server)
    read = stream_state(read_stream)
    if target is not None and read is not None:
        _targets.IN_PROCESS_STREAMS[read] = target


def in_process_client(client: Any, session: Any) -> None:
    """mcp 2.x ``Client(server)`` built ``session``, before its handshake: for an in-process
    ``server`` (not a URL, stdio parameters or a transport: a direct dispatcher or in-memory
    streams), the session talks to that server object (docs/model.md#scope)."""
    server = getattr(client, "server", None)
    state = _state.SESSIONS.get(session)
    if state is None or state.network_transport is not None or not _is_server(server):
        return
    target = _targets.in_process_target(server)
    if target is not None:
        state.target_key, state.pending_stream = _targets.target_key(target), None


def _is_server(candidate: Any) -> bool:
    """An in-process MCP server object: the low-level ``Server`` or a server wrapping one."""
    from mcp.server.lowlevel import Server

    return isinstance(candidate, Server) or isinstance(
        getattr(candidate, "_lowlevel_server", None), Server
    )


def stdio_spawned(
    frame: FrameType | None, command: Any, args: Any, env: Any = None, cwd: Any = None
) -> None:
    """``stdio_client`` (the frame awaiting the process, or one of its callers) started a server.

    Its write stream exists now (mcp 1.x) or right after the process starts (2.x), as the local
    ``write_stream`` of that frame: it is claimed now or at the next session registration.
    """
    for _ in range(_STDIO_FRAME_DEPTH):
        if frame is None or frame.f_code.co_name == "stdio_client":
            break
        frame = frame.f_back
    if frame is None or frame.f_code.co_name != "stdio_client":
        return
    argv = tuple(map(str, args)) if isinstance(args, list | tuple) else ()
    environment = {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else None
    line = _targets.stdio_target(str(command), argv, environment, None if cwd is None else str(cwd))
    _state.STDIO_FRAMES.append((frame, line))
    claim(_state.STDIO_FRAMES, _state.STDIO_STREAMS)


#: How far above the process hook ``stdio_client``'s frame may be (wrapper layers).
_STDIO_FRAME_DEPTH = 4


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


def on_notification(telemetry: Telemetry, session: Any, method: Any) -> None:
    """Record ``notifications/tools/list_changed``: its arrival time (span start) and session.

    Kind SERVER: semconv's ``mcp.server`` span is "reported ... by the MCP client when the server
    initiates the operation"; a notification received by the client is such an operation.
    """
    if method != A.NOTIFICATION_SPAN_METHOD:
        return
    state = _state.SESSIONS.get(session)
    if state is None:
        return
    attrs: dict[str, Any] = {A.MCP_METHOD_NAME: method, A.SESSION_KEY: state.key}
    attrs.update(state.connection_attributes())
    server = {
        A.MCP_SESSION_ID: state.session_id,
        A.SERVER_NAME: state.server_name,
        A.SERVER_VERSION: state.server_version,
    }
    attrs.update(present(server))
    telemetry.tracer.start_span(
        A.NOTIFICATION_SPAN_METHOD, kind=SpanKind.SERVER, attributes=attrs
    ).end()


def waiting_for_user(session: Any, record: RequestRecord | None, waiting: bool) -> None:
    """The server asked this session's user something (elicitation) during a ``tools/call``.

    Set on the open span so the processor's in-flight gauge says ``waiting_for_user`` instead of
    judging the call's clocks; cleared (``False``) when the answer is sent back. The call is the
    one whose context the server's request carries (streamable HTTP, in-process); where no
    context travels (stdio), it is the session's only open call, and none when several are open.
    """
    state = _state.SESSIONS.get(session)
    if state is None:
        return
    if record is None or record.state is not state or record.method != "tools/call":
        open_calls = [r for r in state.open_calls if not r.ended]
        record = open_calls[0] if len(open_calls) == 1 else None
    if record is not None and not record.ended and record.recording:
        record.span.set_attributes(encode_waiting_for_user(waiting))


# ----------------------------------------------------------------------------------------------
# The notification channel: where the session can hear ``list_changed``
# ----------------------------------------------------------------------------------------------
# A session hears ``notifications/tools/list_changed`` only while its notification channel is
# alive (docs/model.md#scope): its own stream while the session is open (stdio, in-process, SSE;
# only its end while the session is open is recorded, :func:`stream_ended`); over streamable
# HTTP, the GET stream the SDK attaches in the background after the handshake (it dies with the
# server process, and the SDK's reconnection then fails); at the
# 2026-07-28 era, a ``subscriptions/listen`` stream that the client opened and the server
# acknowledged for tool changes (no agent framework opens one). The handshake span names the
# channel the session needs (``mcp_health.session.notification_channel``); an
# ``mcp_health.channel`` span marks each attach (``mcp_health.channel.open = true``) and each end
# of one, so the span processor counts as listeners only sessions whose channel is alive. A GET
# stream counts as attached from a 2xx answer to its GET until the SDK's next attempt (it waits
# about a second after the stream ended), a failed attempt, or the end of its reconnection loop.
@dataclass(slots=True, eq=False)
class Channel:
    """One GET stream or ``subscriptions/listen`` stream of a session, and whether it is open."""

    state: SessionState
    kind: str
    open: bool = False


#: ``subscriptions/listen`` routes of instrumented sessions -> their channel.
_ROUTES: weakref.WeakKeyDictionary[Any, Channel] = weakref.WeakKeyDictionary()


def channel_of(method: str, state: SessionState) -> str:
    """The channel a session that shook hands with ``method`` hears ``list_changed`` on."""
    if method == "server/discover":
        return A.CHANNEL_LISTEN_STREAM
    return state.notification_channel


def streamable_http(state: SessionState) -> None:
    """The session talks streamable HTTP: it hears changes on its GET stream only."""
    state.notification_channel = A.CHANNEL_HTTP_GET_STREAM


def get_stream(read_stream_writer: Any) -> Channel | None:
    """The SDK starts a session's GET stream: the channel, if the session is instrumented
    (found by the stream the transport answers into, which the session reads)."""
    inbound = getattr(getattr(read_stream_writer, "_inner", read_stream_writer), "_state", None)
    state = _state.INBOUND_STREAMS.get(inbound) if inbound is not None else None
    return Channel(state, A.CHANNEL_HTTP_GET_STREAM) if state is not None else None


def get_attempt(telemetry: Telemetry, channel: Channel) -> None:
    """The GET stream sends a GET: the stream before it, if any, has ended."""
    channel_closed(telemetry, channel)


def get_answered(telemetry: Telemetry, channel: Channel, response: Any) -> None:
    """The GET was answered: a 2xx attaches the stream (anything else is a failed attempt)."""
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and 200 <= status < 300:
        _channel_mark(telemetry, channel, opened=True)


def channel_closed(telemetry: Telemetry, channel: Channel) -> None:
    """The channel ended (or the SDK stopped trying): mark it once."""
    if channel.open:
        _channel_mark(telemetry, channel, opened=False)


def listen_route(session: Any, route: Any) -> None:
    """A ``subscriptions/listen`` route was registered for this session (before its request)."""
    state = _state.SESSIONS.get(session)
    if state is not None:
        _ROUTES[route] = Channel(state, A.CHANNEL_LISTEN_STREAM)


def listen_acknowledged(telemetry: Telemetry, route: Any) -> None:
    """The server acknowledged a listen stream: open when it honoured tool changes and the
    stream has not already ended."""
    channel = _ROUTES.get(route)
    honored = getattr(route, "honored", None)
    if channel is None or channel.open or getattr(route, "end", None) is not None:
        return
    if getattr(honored, "tools_list_changed", None):
        _channel_mark(telemetry, channel, opened=True)


def listen_settled(telemetry: Telemetry, route: Any) -> None:
    """A listen stream ended (gracefully, lost, or closed by the client)."""
    channel = _ROUTES.get(route)
    if channel is not None:
        channel_closed(telemetry, channel)


def stream_ended(telemetry: Telemetry, session: Any) -> None:
    """The session's receive loop reached the end of its stream while the session is open (the
    stdio server process exited, the SSE stream dropped): a session that hears changes on its
    own stream hears nothing from now on, though the application still holds it open."""
    state = _state.SESSIONS.get(session) or _state.DISPATCHERS.get(session)
    if state is not None and state.notification_channel == A.CHANNEL_SESSION:
        _channel_mark(telemetry, Channel(state, A.CHANNEL_SESSION, open=True), opened=False)


def _channel_mark(telemetry: Telemetry, channel: Channel, *, opened: bool) -> None:
    """One INTERNAL span, a root of its own (the channel belongs to no request)."""
    channel.open = opened
    attrs = {A.SESSION_KEY: channel.state.key}
    attrs.update(encode_channel(channel.kind, opened=opened))
    telemetry.tracer.start_span(
        A.CHANNEL_SPAN_NAME, context=Context(), kind=SpanKind.INTERNAL, attributes=attrs
    ).end()
