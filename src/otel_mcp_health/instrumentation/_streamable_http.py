"""The streamable HTTP transport: the POST that carries a request, and the HTTP client's ``send``
every request of both HTTP transports passes through (private; the rules every wrapper follows:
:mod:`._shell`).

A hook module (the seam's contract: :data:`._compat.HOOK_MODULES`) that also holds the
transport's wrappers (:data:`WRAPPERS`). The SDK collapses HTTP 401/403/503 into JSON-RPC
``-32603`` and turns connection failures into a cancellation of the caller, so the evidence has
to be taken at the transport (:mod:`._http_facts`). On 2.x each POST runs in a copy of the
caller's context (``ContextSendStream``), which is how these hooks find the request's record:
``_state.REQUEST`` in the POST task is the request that caused the POST; 1.x finds it by id
(:func:`wire_record`). While a POST of ours runs, :data:`POST` names its record, and the HTTP
client's ``send`` reports the response to it. The same ``send`` runs a GET stream's GETs
(:mod:`._notifications`) and the SSE transport's requests (:mod:`._sse`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

from otel_mcp_health.core.bounds import cap
from otel_mcp_health.instrumentation import _http_facts, _notifications, _sse, _state, _targets
from otel_mcp_health.instrumentation._notifications import GET_STREAM
from otel_mcp_health.instrumentation._shell import Args, Kwargs, active, argument, fence
from otel_mcp_health.instrumentation._state import RequestRecord, Telemetry

_logger = logging.getLogger(__name__)

#: The record a POST task is sending (set in the POST task's own context copy only).
POST: ContextVar[RequestRecord | None] = ContextVar("otel_mcp_health_http_post", default=None)


# ----------------------------------------------------------------------------------------------
# Hooks: what a POST tells
# ----------------------------------------------------------------------------------------------
def on_http_request(record: RequestRecord, transport: Any) -> None:
    """A POST for this request is about to go out: learn the server identity and session id."""
    state = record.state
    if state.network_transport is None:
        state.network_transport = "tcp"
        url = urlsplit(str(transport.url))
        state.server_address = url.hostname
        state.server_port = url.port or _targets.DEFAULT_PORTS.get(url.scheme)
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


# ----------------------------------------------------------------------------------------------
# Wrappers: the POST of a request, and the HTTP client's send
# ----------------------------------------------------------------------------------------------
def _request_in_context(post_ctx: Any) -> RequestRecord | None:
    """2.x: the open request in the POST task's context, if this POST carries it."""
    record = _state.REQUEST.get()
    if record is None or record.ended:
        return None
    try:
        return record if post_matches(record, post_ctx) else None
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
    POST's context argument (2.x by default; 1.x finds it by id, :func:`wire_record`)."""
    record = record_of(argument(args, kwargs, 0, "ctx")) if active(configured) is not None else None
    if record is None or record.ended:
        return await wrapped(*args, **kwargs)
    with fence("http request"):
        on_http_request(record, instance)
    with fence("notification channel"):
        _notifications.streamable_http(record.state)
    token = POST.set(record)
    try:
        return await wrapped(*args, **kwargs)
    except Exception as exc:
        with fence("http error"):
            _http_facts.on_http_error(record, exc)
        raise
    finally:
        POST.reset(token)


def wire_record(post_ctx: Any) -> RequestRecord | None:
    """The request a 1.x POST carries, found by its JSON-RPC id (fenced: ``None`` on failure)."""
    try:
        return wire_request_of(post_ctx)
    except Exception:
        _logger.debug("mcp_health: POST lookup failed; ignored", exc_info=True)
        return None


#: ``StreamableHTTPTransport._handle_post_request`` (1.x): server identity, session id, HTTP
#: status and failures of the POST that carries a request.
handle_post_request_v1 = functools.partial(handle_post_request, record_of=wire_record)


async def client_send(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``httpx2.AsyncClient.send`` (2.x) / ``httpx.AsyncClient.send`` (1.x): inside a POST of
    ours only, the response's status, ``WWW-Authenticate`` and session id (the SDK's own request
    helpers all send through it, whatever they are called in a release); inside a GET stream's
    task, whether its GET attached; on the SSE transport, its connecting GET and its POSTs."""
    channel = GET_STREAM.get()
    telemetry = active(configured)
    if channel is not None and telemetry is not None:
        return await _notifications.get_stream_send(telemetry, channel, wrapped, args, kwargs)
    sse: _sse.SseExchange | None = None
    if telemetry is not None and POST.get() is None:
        with fence("sse request"):
            sse = _sse.sse_exchange(instance, argument(args, kwargs, 0, "request"))
    if sse is not None and telemetry is not None:
        return await _sse.sse_send(telemetry, sse, wrapped, args, kwargs)
    response = await wrapped(*args, **kwargs)
    record = POST.get()
    if record is not None and not record.ended and active(configured) is not None:
        with fence("http response"):
            _http_facts.on_http_response(record, response)
    return response


#: The wrapper code of this module (the patch table's rows); every other public function is a hook.
WRAPPERS = (handle_post_request, handle_post_request_v1, client_send)
