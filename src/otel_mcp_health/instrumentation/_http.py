"""Streamable HTTP transport hooks (private).

The SDK collapses HTTP 401/403/503 into JSON-RPC ``-32603`` and turns connection failures into a
cancellation of the caller, so the evidence has to be taken at the transport. Each POST runs in a
copy of the caller's context (``ContextSendStream``), which is how these hooks find the request's
record: ``_state.REQUEST`` in the POST task is the request that caused the POST.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import wrapt

from otel_mcp_health.instrumentation import _state, _transport_hooks
from otel_mcp_health.instrumentation._state import RequestRecord, Telemetry
from otel_mcp_health.instrumentation._wrappers import active, fenced

#: The record a POST task is sending (set in the POST task's own context copy only).
_POST: ContextVar[RequestRecord | None] = ContextVar("otel_mcp_health_http_post", default=None)


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
    fenced("http request", _transport_hooks.on_http_request, record, instance)
    token = _POST.set(record)
    try:
        return await wrapped(*args, **kwargs)
    except Exception as exc:
        fenced("http error", _transport_hooks.on_http_error, record, exc)
        raise
    finally:
        _POST.reset(token)


def _is_post_for(record: RequestRecord, post_ctx: Any) -> bool:
    try:
        return _transport_hooks.post_matches(record, post_ctx)
    except Exception:
        return False


def stream_within_origin(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """``mcp.client.streamable_http.stream_within_origin``: see the POST's ``httpx2.Response``."""
    manager = wrapped(*args, **kwargs)
    record = _POST.get()
    if record is None or record.ended:
        return manager
    return _ResponseTap(manager, record)


class _ResponseTap(wrapt.ObjectProxy[Any]):
    """The response context manager, unchanged except that entering it records the status."""

    def __init__(self, wrapped: Any, record: RequestRecord) -> None:
        super().__init__(wrapped)
        self._self_record = record

    async def __aenter__(self) -> Any:
        response = await self.__wrapped__.__aenter__()
        fenced("http response", _transport_hooks.on_http_response, self._self_record, response)
        return response

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self.__wrapped__.__aexit__(*exc_info)
