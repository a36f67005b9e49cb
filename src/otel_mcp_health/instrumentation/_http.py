"""Streamable HTTP transport hooks (private).

The SDK collapses HTTP 401/403/503 into JSON-RPC ``-32603`` and turns connection failures into a
cancellation of the caller, so the evidence has to be taken at the transport. On 2.x each POST
runs in a copy of the caller's context (``ContextSendStream``), which is how these hooks find the
request's record: ``_state.REQUEST`` in the POST task is the request that caused the POST (1.x
finds it by id: ``_v1_wrappers.handle_post_request``). While a POST of ours runs, :data:`POST`
names its record, and the HTTP client's ``send`` reports the response to it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from otel_mcp_health.instrumentation import _state, _transport_hooks
from otel_mcp_health.instrumentation._state import RequestRecord, Telemetry
from otel_mcp_health.instrumentation._wrappers import active, fence

#: The record a POST task is sending (set in the POST task's own context copy only).
POST: ContextVar[RequestRecord | None] = ContextVar("otel_mcp_health_http_post", default=None)


async def handle_post_request(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """``StreamableHTTPTransport._handle_post_request``: server identity, session id, failures."""
    record = _state.REQUEST.get()
    post_ctx = args[0] if args else kwargs.get("ctx")
    if (
        record is None
        or record.ended
        or active(configured) is None
        or not _is_post_for(record, post_ctx)
    ):
        return await wrapped(*args, **kwargs)
    return await post_for(record, wrapped, instance, args, kwargs)


async def post_for(
    record: RequestRecord,
    wrapped: Any,
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Run one POST that carries ``record``'s request, naming it in :data:`POST` meanwhile."""
    with fence("http request"):
        _transport_hooks.on_http_request(record, instance)
    token = POST.set(record)
    try:
        return await wrapped(*args, **kwargs)
    except Exception as exc:
        with fence("http error"):
            _transport_hooks.on_http_error(record, exc)
        raise
    finally:
        POST.reset(token)


def _is_post_for(record: RequestRecord, post_ctx: Any) -> bool:
    try:
        return _transport_hooks.post_matches(record, post_ctx)
    except Exception:
        return False


async def client_send(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """``httpx2.AsyncClient.send`` (2.x) / ``httpx.AsyncClient.send`` (1.x): inside a POST of
    ours only, the response's status, ``WWW-Authenticate`` and session id (the SDK's own request
    helpers all send through it, whatever they are called in a release)."""
    response = await wrapped(*args, **kwargs)
    record = POST.get()
    if record is not None and not record.ended and active(configured) is not None:
        with fence("http response"):
            _transport_hooks.on_http_response(record, response)
    return response
