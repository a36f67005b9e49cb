"""The server's messages to a client session and the channel that carries them (private; the
rules every wrapper follows: :mod:`._shell`).

A hook module (the seam's contract: :data:`._compat.HOOK_MODULES`) that also holds the wrappers
of the server's messages (:data:`WRAPPERS`): a notification (``list_changed`` becomes a SERVER
span at its arrival), a request the application answers (an elicitation during a ``tools/call``
means the call waits on a person), and the channel a session hears ``list_changed`` on: its own
stream, the streamable HTTP GET stream, or a ``subscriptions/listen`` stream.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import SpanKind

from otel_mcp_health import attributes as A
from otel_mcp_health._codec import encode_channel, encode_waiting_for_user, present
from otel_mcp_health.instrumentation import _state
from otel_mcp_health.instrumentation._shell import Args, Kwargs, active, argument, fence
from otel_mcp_health.instrumentation._state import RequestRecord, SessionState, Telemetry

_ELICITATION = "elicitation/create"

#: Reads the method of a server message from its handler's arguments (per SDK line).
MethodOf = Callable[[Args, Kwargs], Any]


# ----------------------------------------------------------------------------------------------
# The server's notifications and requests to the session
# ----------------------------------------------------------------------------------------------
def _method_argument(args: Args, kwargs: Kwargs) -> Any:
    """2.x ``_on_notify`` / ``_on_request``: the method is the handler's second argument."""
    return argument(args, kwargs, 1, "method")


@contextmanager
def _outside_requests() -> Iterator[None]:
    """A server message's handler may run in the context of the request that carried it; what
    the application does in it (e.g. re-list after ``list_changed``) is its own request."""
    internal_token = _state.INTERNAL.set(False)
    slot_token = _state.SLOT.set(None)
    try:
        yield
    finally:
        _state.SLOT.reset(slot_token)
        _state.INTERNAL.reset(internal_token)


async def notified(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
    *,
    method_of: MethodOf = _method_argument,
) -> Any:
    """A server notification reached the session (``list_changed``); ``method_of`` reads its
    method (2.x ``ClientSession._on_notify`` by default; 1.x: :data:`received_notification`)."""
    telemetry = active(configured)
    if telemetry is None:
        return await wrapped(*args, **kwargs)
    method = method_of(args, kwargs)
    with fence("notification"):
        on_notification(telemetry, instance, method)
    with _outside_requests():
        return await wrapped(*args, **kwargs)


async def requested(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
    *,
    method_of: MethodOf = _method_argument,
) -> Any:
    """The server sent the session a request, answered by the application; ``method_of`` as in
    :func:`notified` (2.x ``ClientSession._on_request`` by default).

    An ``elicitation/create`` during a ``tools/call`` means the call waits on a person.
    """
    if active(configured) is None:
        return await wrapped(*args, **kwargs)
    waiting = method_of(args, kwargs) == _ELICITATION
    record = _state.REQUEST.get()
    if waiting:
        with fence("waiting for user"):
            waiting_for_user(instance, record, True)
    try:
        with _outside_requests():
            return await wrapped(*args, **kwargs)
    finally:
        if waiting:
            with fence("waiting for user"):
                waiting_for_user(instance, record, False)


def _notification_method(args: Args, kwargs: Kwargs) -> Any:
    """``_received_notification(notification)``: the typed notification's method."""
    notification = argument(args, kwargs, 0, "notification")
    return getattr(getattr(notification, "root", notification), "method", None)


def _request_method(args: Args, kwargs: Kwargs) -> Any:
    """``_received_request(responder)``: the method of the request the responder answers."""
    request = getattr(argument(args, kwargs, 0, "responder"), "request", None)
    return getattr(getattr(request, "root", request), "method", None)


#: ``ClientSession._received_notification`` / ``_received_request``: inbound server notifications
#: and server-initiated requests (elicitation), as on 2.x but for where the method is.
received_notification = functools.partial(notified, method_of=_notification_method)
received_request = functools.partial(requested, method_of=_request_method)


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


# ----------------------------------------------------------------------------------------------
# The GET stream of a streamable HTTP session (its channel)
# ----------------------------------------------------------------------------------------------
#: The GET stream a task runs (set in the SDK's GET-stream task's own context only).
GET_STREAM: ContextVar[Channel | None] = ContextVar("otel_mcp_health_get_stream", default=None)


async def handle_get_stream(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``StreamableHTTPTransport.handle_get_stream``: the SDK's loop that attaches (and
    re-attaches) a session's GET stream for server messages; it returns when it gives up."""
    telemetry = active(configured)
    channel: Channel | None = None
    if telemetry is not None:
        with fence("get stream"):
            channel = get_stream(argument(args, kwargs, 1, "read_stream_writer"))
    if telemetry is None or channel is None:
        return await wrapped(*args, **kwargs)
    token = GET_STREAM.set(channel)
    try:
        return await wrapped(*args, **kwargs)
    finally:
        GET_STREAM.reset(token)
        with fence("get stream end"):
            channel_closed(telemetry, channel)


async def get_stream_send(
    telemetry: Telemetry, channel: Channel, wrapped: Any, args: Args, kwargs: Kwargs
) -> Any:
    """One GET of a GET stream: the stream before it has ended; a 2xx answer attaches it."""
    with fence("get attempt"):
        get_attempt(telemetry, channel)
    response = await wrapped(*args, **kwargs)
    with fence("get answer"):
        get_answered(telemetry, channel, response)
    return response


#: The wrapper code of this module (the patch table's rows, and the part of the HTTP client's
#: ``send`` wrapper that runs a GET stream's GET); every other public function is a hook.
WRAPPERS = (
    notified,
    requested,
    received_notification,
    received_request,
    handle_get_stream,
    get_stream_send,
)
