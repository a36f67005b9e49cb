"""The SSE transport (``mcp.client.sse.sse_client``, both SDK lines): which sessions talk SSE,
to which server, and what its HTTP requests tell (private; the rules every wrapper follows:
:mod:`._shell`).

A hook module (the seam's contract: :data:`._compat.HOOK_MODULES`) that also holds the wrapper
code of one SSE request (:data:`WRAPPERS`, reached from the HTTP client's ``send`` wrapper,
:func:`._streamable_http.client_send`). The connecting GET names the session that follows
(address, port, target key): ``sse_client``'s frame is remembered until the write stream it
yields exists, and the session over that very stream talks SSE. Its HTTP client's POSTs carry
the session's requests. A GET refused before any session exists is judged on a span of its own
(``mcp_health.connect``).
"""

from __future__ import annotations

import secrets
import sys
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_mcp_health import attributes as A
from otel_mcp_health._codec import Connection, encode_connection, encode_request
from otel_mcp_health.core.facts import Fact, HttpFailure
from otel_mcp_health.core.fold import records
from otel_mcp_health.core.observations import Observed
from otel_mcp_health.instrumentation import _http_facts, _state, _targets
from otel_mcp_health.instrumentation._shell import Args, Kwargs, fence
from otel_mcp_health.instrumentation._state import RequestRecord, SessionState, Telemetry
from otel_mcp_health.instrumentation._streams import claim, stream_state


@dataclass(frozen=True, slots=True)
class SseConnection:
    """Where an SSE session's connecting GET went (``sse_client``'s URL): its server's address,
    port and :func:`._targets.target_key`."""

    address: str | None
    port: int | None
    target_key: str


#: ``sse_client`` frames whose connecting GET was answered, with where it went and the HTTP client
#: that sent it, not yet matched to their write stream (claimed at the next session registration,
#: like ``_stdio.STDIO_FRAMES``; a frame whose session never comes is pushed out).
SSE_FRAMES: deque[tuple[FrameType, tuple[SseConnection, Any]]] = deque(maxlen=16)
#: The shared state of a write stream that ``sse_client`` yielded -> where its GET went and its
#: HTTP client: the session over that stream talks SSE.
SSE_STREAMS: weakref.WeakKeyDictionary[Any, tuple[SseConnection, Any]] = weakref.WeakKeyDictionary()
#: The HTTP client of an SSE session -> the session's state (its POSTs carry the session's
#: requests; the client lives as long as the transport).
SSE_CLIENTS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _claim_sse_frames() -> None:
    """Turn each pending ``sse_client`` frame whose write stream exists into a weak entry of
    :data:`SSE_STREAMS`. Called at every answered connecting GET as well as at every session
    registration: many SSE sessions connecting at once (a service opening one per request) must
    never push a frame out of the bounded :data:`SSE_FRAMES` before its session registers (its
    streams come right after the GET)."""
    claim(SSE_FRAMES, SSE_STREAMS)


def learn_sse(state: SessionState, dispatcher: Any) -> bool:
    """A session over the write stream ``sse_client`` yielded talks SSE (docs/model.md#scope):
    its connecting GET named the server (``tcp``, address, port, target key), and its HTTP
    client's POSTs carry the session's requests."""
    _claim_sse_frames()
    own = stream_state(getattr(dispatcher, "_write_stream", None))
    found = SSE_STREAMS.get(own) if own is not None else None
    if found is None:
        return False
    where, client = found
    state.network_transport, state.target_key = "tcp", where.target_key
    state.server_address, state.server_port = where.address, where.port
    SSE_CLIENTS[client] = state
    return True


@dataclass(slots=True, eq=False)
class SseExchange:
    """One HTTP request of the SSE transport: the connecting GET of ``sse_client`` (its frame,
    whose streams become the session's, and its URL), or a POST carrying a request (its record)."""

    client: Any
    frame: FrameType | None = None
    url: Any = None
    record: RequestRecord | None = None


#: How far above ``AsyncClient.send`` the frames of ``sse_client`` and of its POST writer may be
#: (the SDK's and the HTTP client's request helpers, wrapper layers).
_SSE_FRAME_DEPTH = 16


def sse_exchange(client: Any, request: Any) -> SseExchange | None:
    """The SSE transport's view of an HTTP request about to be sent (``None``: not one of its
    requests): the GET that ``sse_client`` connects with, or a POST of a client whose session
    talks SSE (:data:`SSE_CLIENTS`), with the request its message carries."""
    method = getattr(request, "method", None)
    if method == "POST":
        state = SSE_CLIENTS.get(client)
        return None if state is None else SseExchange(client, record=_sse_record(state))
    if method != "GET" or "text/event-stream" not in request.headers.get("accept", ""):
        return None
    frame = _frame_of(lambda f: f.f_code.co_name == "sse_client")
    if frame is None or frame.f_globals.get("__name__") != "mcp.client.sse":
        return None
    return SseExchange(client, frame=frame, url=request.url)


def _frame_of(test: Callable[[FrameType], bool]) -> FrameType | None:
    frame: FrameType | None = sys._getframe(2)  # noqa: SLF001 - the transport's own frames
    for _ in range(_SSE_FRAME_DEPTH):
        if frame is None or test(frame):
            return frame
        frame = frame.f_back
    return None


def _sse_record(state: SessionState) -> RequestRecord | None:
    """The open request a POST of an SSE session carries (its writer's ``session_message``): the
    request in the POST's context (2.x), else the session's open request of that id (1.x)."""
    frame = _frame_of(lambda f: "session_message" in f.f_code.co_varnames)
    message = frame.f_locals.get("session_message") if frame is not None else None
    root = getattr(getattr(message, "message", None), "root", getattr(message, "message", None))
    request_id, method = getattr(root, "id", None), getattr(root, "method", None)
    if request_id is None or method is None:
        return None  # a notification or a response: no request of ours
    record = _state.REQUEST.get()
    if record is not None and record.state is state and record.method == method:
        return None if record.ended else record
    return state.wire_requests.get(str(request_id))


def sse_answered(telemetry: Telemetry, exchange: SseExchange, response: Any) -> None:
    """An SSE request got a response: a POST's is its request's HTTP evidence; the connecting
    GET's names the session that follows, or, refused, is judged as the attempt it ends."""
    if exchange.record is not None:
        _http_facts.on_http_response(exchange.record, response)
    elif exchange.frame is not None:
        fact = _http_facts.response_fact(response)
        if 300 <= fact.status < 400 and _followed(response):
            return  # the GET to where it points comes next, from the same sse_client
        if fact.status >= 300:
            # sse_client raises for any error status (both SDK lines), and no JSON-RPC answer
            # follows: the status itself is the transport's failure (a 401 or 403 still passes
            # the transport and fails authorization; docs/model.md#server-identity).
            refused = HttpFailure("HTTPStatusError", outcome="http_error", written=True)
            _connect_refused(telemetry, exchange, [fact, refused])
        elif fact.status < 300 and not _is_event_stream(response):
            # A 2xx that is no event stream (an SSO proxy's login page): sse_client raises
            # SSEError on both SDK lines, and no session follows.
            refused = HttpFailure("SSEError", outcome="http_error", written=True)
            _connect_refused(telemetry, exchange, [fact, refused])
        else:
            _claim_sse_frames()  # the earlier GETs' streams exist by now: room for this
            SSE_FRAMES.append((exchange.frame, (_sse_connection(exchange), exchange.client)))


def _followed(response: Any) -> bool:
    """Will ``sse_client`` follow this redirect? The SDK's own rule where it has one (same
    origin, same method: ``next_request_within_origin``); older SDKs let the HTTP client follow
    redirects itself, so a redirect it hands back is final."""
    try:
        from mcp.shared._httpx_utils import next_request_within_origin
    except ImportError:
        return False
    return next_request_within_origin(response) is not None


def _is_event_stream(response: Any) -> bool:
    return "text/event-stream" in str(response.headers.get("content-type", "")).lower()


def sse_failed(telemetry: Telemetry, exchange: SseExchange, exc: BaseException) -> None:
    """An SSE request failed below HTTP (or its client raised for an error status)."""
    if exchange.record is not None:
        _http_facts.on_http_error(exchange.record, exc)
    elif exchange.frame is not None:
        _connect_refused(telemetry, exchange, _http_facts.failure_facts(exc))


def _sse_connection(exchange: SseExchange) -> SseConnection:
    """Where the connecting GET went: address, port and the server's target key."""
    url = urlsplit(str(exchange.url))
    port = url.port or _targets.DEFAULT_PORTS.get(url.scheme)
    target = _targets.http_target(url.scheme, url.hostname or "", port, url.path, url.query)
    return SseConnection(url.hostname, port, _targets.target_key(target))


def _connect_refused(telemetry: Telemetry, exchange: SseExchange, facts: list[Fact]) -> None:
    """The SSE server refused the connecting GET before any session existed: one judged span of
    the attempt (``mcp_health.connect``, docs/model.md#scope) and its session's end."""
    where = _sse_connection(exchange)
    key = secrets.token_hex(8)
    built = records(Observed(method=A.CONNECT_SPAN_NAME), facts, network="tcp")
    attrs = {
        A.SESSION_KEY: key,
        **encode_connection(Connection(None, "tcp", where.address, where.port)),
        A.NETWORK_PROTOCOL_NAME: "http",
        A.SERVER_TARGET_KEY: where.target_key,
        **encode_request(built.request),
    }
    span = telemetry.tracer.start_span(A.CONNECT_SPAN_NAME, kind=SpanKind.CLIENT, attributes=attrs)
    span.set_status(Status(StatusCode.ERROR))
    span.end()
    ended = {A.SESSION_KEY: key}
    kind = SpanKind.INTERNAL
    telemetry.tracer.start_span(A.SESSION_END_SPAN_NAME, kind=kind, attributes=ended).end()


# ----------------------------------------------------------------------------------------------
# One HTTP request of the transport: the connecting GET, or a POST carrying a request
# ----------------------------------------------------------------------------------------------
async def sse_send(
    telemetry: Telemetry, exchange: SseExchange, wrapped: Any, args: Args, kwargs: Kwargs
) -> Any:
    """One HTTP request of the SSE transport: its answer or failure is evidence of its session
    (the connecting GET) or of the request its POST carries."""
    try:
        response = await wrapped(*args, **kwargs)
    except Exception as exc:
        with fence("sse failure"):
            sse_failed(telemetry, exchange, exc)
        raise
    with fence("sse answer"):
        sse_answered(telemetry, exchange, response)
    return response


#: The wrapper code of this module (reached from ``_streamable_http.client_send``); every other
#: public function is a hook.
WRAPPERS = (sse_send,)
