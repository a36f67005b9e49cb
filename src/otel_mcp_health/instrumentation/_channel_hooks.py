"""Hooks of a session's notification channel: where it can hear ``list_changed``.

A hook module (the seam's contract: :data:`._wrappers.HOOK_MODULES`). A session hears
``notifications/tools/list_changed`` only while its notification channel is alive
(docs/model.md#scope):

* its own stream while the session is open (stdio, in-process, SSE): nothing to record;
* streamable HTTP: the GET stream the SDK attaches in the background after the handshake. It
  dies with the server process (a restart), and the SDK's reconnection then fails;
* the 2026-07-28 era: a ``subscriptions/listen`` stream that the client opened and the server
  acknowledged for tool changes (no agent framework opens one).

The handshake span names the channel the session needs
(``mcp_health.session.notification_channel``); an ``mcp_health.channel`` span marks each attach
(``mcp_health.channel.open = true``) and each end of one, so the span processor counts as
listeners only sessions whose channel is alive. A GET stream counts as attached from a 2xx answer
to its GET until the SDK's next attempt (it waits about a second after the stream ended), a
failed attempt, or the end of the SDK's reconnection loop.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import SpanKind

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import _state
from otel_mcp_health.instrumentation._state import SessionState, Telemetry


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
    closed(telemetry, channel)


def get_answered(telemetry: Telemetry, channel: Channel, response: Any) -> None:
    """The GET was answered: a 2xx attaches the stream (anything else is a failed attempt)."""
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and 200 <= status < 300:
        _mark(telemetry, channel, opened=True)


def closed(telemetry: Telemetry, channel: Channel) -> None:
    """The channel ended (or the SDK stopped trying): mark it once."""
    if channel.open:
        _mark(telemetry, channel, opened=False)


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
        _mark(telemetry, channel, opened=True)


def listen_settled(telemetry: Telemetry, route: Any) -> None:
    """A listen stream ended (gracefully, lost, or closed by the client)."""
    channel = _ROUTES.get(route)
    if channel is not None:
        closed(telemetry, channel)


def _mark(telemetry: Telemetry, channel: Channel, *, opened: bool) -> None:
    """One INTERNAL span, a root of its own (the channel belongs to no request)."""
    channel.open = opened
    attrs = {A.SESSION_KEY: channel.state.key}
    attrs.update(_codec.encode_channel(channel.kind, opened=opened))
    telemetry.tracer.start_span(
        A.CHANNEL_SPAN_NAME, context=Context(), kind=SpanKind.INTERNAL, attributes=attrs
    ).end()
