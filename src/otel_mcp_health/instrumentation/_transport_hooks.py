"""Hooks of the HTTP transports (streamable HTTP, SSE), captured before the SDK collapses
statuses into -32603.

A hook module (the seam's contract: :data:`._shell.HOOK_MODULES`). The HTTP response or
failure of a POST becomes a fact of its request (``HttpResponse``, ``HttpFailure``), folded with
the others when the request ends. On SSE, the connecting GET names the session that follows
(address, port, target key), and a GET refused before any session exists is judged on a span of
its own (``mcp_health.connect``).
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_mcp_health import attributes as A
from otel_mcp_health._codec import Connection, encode_connection, encode_request
from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.facts import Fact, HttpFailure, HttpResponse
from otel_mcp_health.core.failures import classify_transport_failure, leaf, parse_www_authenticate
from otel_mcp_health.core.fold import records
from otel_mcp_health.core.observations import Observed
from otel_mcp_health.core.vocabulary import AuthError
from otel_mcp_health.instrumentation import _state, _targets
from otel_mcp_health.instrumentation._state import RequestRecord, SessionState, Telemetry
from otel_mcp_health.instrumentation._targets import SseConnection

_DEFAULT_PORTS = {"http": 80, "https": 443}


def on_http_request(record: RequestRecord, transport: Any) -> None:
    """A POST for this request is about to go out: learn the server identity and session id."""
    state = record.state
    if state.network_transport is None:
        state.network_transport = "tcp"
        url = urlsplit(str(transport.url))
        state.server_address = url.hostname
        state.server_port = url.port or _DEFAULT_PORTS.get(url.scheme)
        target = _targets.http_target(
            url.scheme, url.hostname or "", state.server_port, url.path, url.query
        )
        state.target_key = _targets.target_key(target)
    session_id = getattr(transport, "session_id", None)
    if isinstance(session_id, str):
        state.session_id = cap(session_id)
    start = state.start_attributes()
    if start is not record.start_attributes:  # learned since the span started
        record.post_attributes = start


def post_matches(record: RequestRecord, post_ctx: Any) -> bool:
    """Is this POST the one carrying the request (not a cancel notification sent in its context)?"""
    message = post_ctx.session_message.message
    if getattr(message, "method", None) != record.method or not hasattr(message, "id"):
        return False
    return record.request_id is None or str(message.id) == record.request_id


def wire_request_of(post_ctx: Any) -> RequestRecord | None:
    """mcp 1.x: the open request a POST carries, found by its id in the session whose inbound
    stream the transport answers into (the POST runs outside the request's context)."""
    inbound = getattr(post_ctx.read_stream_writer, "_state", None)
    state = _state.INBOUND_STREAMS.get(inbound) if inbound is not None else None
    message = getattr(post_ctx.session_message.message, "root", None)
    request_id = getattr(message, "id", None)
    if state is None or request_id is None or not hasattr(message, "method"):
        return None
    return state.wire_requests.get(str(request_id))


def on_http_response(record: RequestRecord, response: Any) -> None:
    """The POST got a response: status, sanitized ``WWW-Authenticate``, session id."""
    fact = _response_fact(response)
    if fact.session_id is not None:
        record.state.session_id = fact.session_id
    record.observe(fact)


def _response_fact(response: Any) -> HttpResponse:
    """An HTTP response as a fact: status, sanitized ``WWW-Authenticate``, session id."""
    status = int(response.status_code)
    headers = response.headers
    json_body = headers.get("content-type", "").lower().startswith("application/json")
    error: str | None = None
    scopes: tuple[str, ...] = ()
    if status in (401, 403):
        error, scopes = parse_www_authenticate(headers.get("www-authenticate"))
    session_id = headers.get("mcp-session-id")
    session_id = cap(session_id) if isinstance(session_id, str) and session_id else None
    auth_error = AuthError(error) if error is not None else None
    return HttpResponse(status, json_body, auth_error, scopes, session_id)


def on_http_error(record: RequestRecord, exc: BaseException) -> None:
    """The POST itself failed (the caller will only see a cancellation): its failure chain.

    mcp 1.x raises ``httpx.HTTPStatusError`` for an error status; the answer is its response.
    """
    for fact in _failure_facts(exc):
        if isinstance(fact, HttpResponse) and fact.session_id is not None:
            record.state.session_id = fact.session_id
        record.observe(fact)


def _failure_facts(exc: BaseException) -> list[Fact]:
    """A failed HTTP request as facts: its error response, or its classified failure chain."""
    exception_type = type(leaf(exc)).__qualname__
    response = getattr(leaf(exc), "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and status >= 300:  # an error, or a redirect nobody followed
        return [_response_fact(response), HttpFailure(exception_type, status=status)]
    failure = classify_transport_failure(exc)
    outcome, written, oauth = failure.outcome, failure.written, failure.oauth
    return [HttpFailure(exception_type, outcome=outcome, written=written, oauth=oauth)]


# ----------------------------------------------------------------------------------------------
# The SSE transport (``mcp.client.sse.sse_client``, both SDK lines)
# ----------------------------------------------------------------------------------------------
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
    talks SSE (:data:`_targets.SSE_CLIENTS`), with the request its message carries."""
    method = getattr(request, "method", None)
    if method == "POST":
        state = _targets.SSE_CLIENTS.get(client)
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
        on_http_response(exchange.record, response)
    elif exchange.frame is not None:
        fact = _response_fact(response)
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
            _targets.claim_sse_frames()  # the earlier GETs' streams exist by now: room for this
            _targets.SSE_FRAMES.append(
                (exchange.frame, (_sse_connection(exchange), exchange.client))
            )


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
        on_http_error(exchange.record, exc)
    elif exchange.frame is not None:
        _connect_refused(telemetry, exchange, _failure_facts(exc))


def _sse_connection(exchange: SseExchange) -> SseConnection:
    """Where the connecting GET went: address, port and the server's target key."""
    url = urlsplit(str(exchange.url))
    port = url.port or _DEFAULT_PORTS.get(url.scheme)
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
