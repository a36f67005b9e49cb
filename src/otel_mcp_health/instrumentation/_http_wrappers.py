"""Streamable HTTP transport hooks (private).

The SDK collapses HTTP 401/403/503 into JSON-RPC ``-32603`` and turns connection failures into a
cancellation of the caller, so the evidence has to be taken at the transport. On 2.x each POST
runs in a copy of the caller's context (``ContextSendStream``), which is how these hooks find the
request's record: ``_state.REQUEST`` in the POST task is the request that caused the POST (1.x
finds it by id: ``_v1_wrappers.wire_record``). While a POST of ours runs, :data:`POST`
names its record, and the HTTP client's ``send`` reports the response to it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from otel_mcp_health.instrumentation import _session_hooks, _state, _transport_hooks
from otel_mcp_health.instrumentation._session_hooks import Channel
from otel_mcp_health.instrumentation._shell import Args, Kwargs, active, argument, fence
from otel_mcp_health.instrumentation._state import RequestRecord, Telemetry

#: The record a POST task is sending (set in the POST task's own context copy only).
POST: ContextVar[RequestRecord | None] = ContextVar("otel_mcp_health_http_post", default=None)
#: The GET stream a task runs (set in the SDK's GET-stream task's own context only).
GET_STREAM: ContextVar[Channel | None] = ContextVar("otel_mcp_health_get_stream", default=None)


def _request_in_context(post_ctx: Any) -> RequestRecord | None:
    """2.x: the open request in the POST task's context, if this POST carries it."""
    record = _state.REQUEST.get()
    if record is None or record.ended:
        return None
    try:
        return record if _transport_hooks.post_matches(record, post_ctx) else None
    except Exception:  # noqa: BLE001 - host first: an unmatched POST is not ours
        return None


async def handle_post_request(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
    *,
    record_of: Callable[[Any], RequestRecord | None] = _request_in_context,
) -> Any:
    """``StreamableHTTPTransport._handle_post_request``: server identity, session id, HTTP status
    and failures of a POST that carries a request; ``record_of`` finds that request from the
    POST's context argument (2.x by default; 1.x finds it by id, ``_v1_wrappers``)."""
    record = record_of(argument(args, kwargs, 0, "ctx")) if active(configured) is not None else None
    if record is None or record.ended:
        return await wrapped(*args, **kwargs)
    with fence("http request"):
        _transport_hooks.on_http_request(record, instance)
    with fence("notification channel"):
        _session_hooks.streamable_http(record.state)
    token = POST.set(record)
    try:
        return await wrapped(*args, **kwargs)
    except Exception as exc:
        with fence("http error"):
            _transport_hooks.on_http_error(record, exc)
        raise
    finally:
        POST.reset(token)


async def handle_get_stream(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
) -> Any:
    """``StreamableHTTPTransport.handle_get_stream``: the SDK's loop that attaches (and
    re-attaches) a session's GET stream for server messages; it returns when it gives up."""
    telemetry = active(configured)
    channel: Channel | None = None
    if telemetry is not None:
        with fence("get stream"):
            channel = _session_hooks.get_stream(argument(args, kwargs, 1, "read_stream_writer"))
    if telemetry is None or channel is None:
        return await wrapped(*args, **kwargs)
    token = GET_STREAM.set(channel)
    try:
        return await wrapped(*args, **kwargs)
    finally:
        GET_STREAM.reset(token)
        with fence("get stream end"):
            _session_hooks.channel_closed(telemetry, channel)


async def _get_stream_send(
    telemetry: Telemetry, channel: Channel, wrapped: Any, args: Args, kwargs: Kwargs
) -> Any:
    """One GET of a GET stream: the stream before it has ended; a 2xx answer attaches it."""
    with fence("get attempt"):
        _session_hooks.get_attempt(telemetry, channel)
    response = await wrapped(*args, **kwargs)
    with fence("get answer"):
        _session_hooks.get_answered(telemetry, channel, response)
    return response


async def _sse_send(
    telemetry: Telemetry,
    exchange: _transport_hooks.SseExchange,
    wrapped: Any,
    args: Args,
    kwargs: Kwargs,
) -> Any:
    """One HTTP request of the SSE transport: its answer or failure is evidence of its session
    (the connecting GET) or of the request its POST carries."""
    try:
        response = await wrapped(*args, **kwargs)
    except Exception as exc:
        with fence("sse failure"):
            _transport_hooks.sse_failed(telemetry, exchange, exc)
        raise
    with fence("sse answer"):
        _transport_hooks.sse_answered(telemetry, exchange, response)
    return response


async def client_send(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
) -> Any:
    """``httpx2.AsyncClient.send`` (2.x) / ``httpx.AsyncClient.send`` (1.x): inside a POST of
    ours only, the response's status, ``WWW-Authenticate`` and session id (the SDK's own request
    helpers all send through it, whatever they are called in a release); inside a GET stream's
    task, whether its GET attached; on the SSE transport, its connecting GET and its POSTs."""
    channel = GET_STREAM.get()
    telemetry = active(configured)
    if channel is not None and telemetry is not None:
        return await _get_stream_send(telemetry, channel, wrapped, args, kwargs)
    sse: _transport_hooks.SseExchange | None = None
    if telemetry is not None and POST.get() is None:
        with fence("sse request"):
            sse = _transport_hooks.sse_exchange(instance, argument(args, kwargs, 0, "request"))
    if sse is not None and telemetry is not None:
        return await _sse_send(telemetry, sse, wrapped, args, kwargs)
    response = await wrapped(*args, **kwargs)
    record = POST.get()
    if record is not None and not record.ended and active(configured) is not None:
        with fence("http response"):
            _transport_hooks.on_http_response(record, response)
    return response
