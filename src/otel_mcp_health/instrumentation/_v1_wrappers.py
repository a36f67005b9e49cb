"""Wrappers of the mcp 1.x client, where the SDK emits no spans (private).

The rules of :mod:`._wrappers` apply. On 1.x ``BaseSession.send_request`` is where every client
request passes: it takes the next JSON-RPC id, writes the request, waits for the answer and
validates it into a typed result. Its wrapper here starts the one CLIENT span of the request (or
enriches an outer library's CLIENT span, as on 2.x) and learns the id before the write.

The 1.x transports carry no context with a message: the streamable HTTP POST runs in the
transport's own task. Its hook finds the request by id in the session whose inbound stream the
transport answers into (``_state.INBOUND_STREAMS``), and sees the ``httpx`` response of the POST.
Server notifications and requests arrive through ``_received_notification`` / ``_received_request``
(the 2.x ``_on_notify`` / ``_on_request``).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from otel_mcp_health.instrumentation import (
    _dispatch_wrappers,
    _request_hooks,
    _state,
    _transport_hooks,
    _wrappers,
)
from otel_mcp_health.instrumentation._http import post_for
from otel_mcp_health.instrumentation._state import RequestRecord, SessionState, Slot, Telemetry
from otel_mcp_health.instrumentation._wrappers import active, fence

_logger = logging.getLogger(__name__)

#: ``BaseSession.send_request(request, result_type, request_read_timeout_seconds, metadata,
#: progress_callback)``: positions of the arguments read here.
_TIMEOUT_ARG, _PROGRESS_ARG = 2, 4


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(name)


def _wire_request(session: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Method, wire params and call options of a 1.x typed request (kept in memory only)."""
    request = _argument(args, kwargs, 0, "request")
    root = getattr(request, "root", request)
    params = getattr(root, "params", None)
    wire = params.model_dump(by_alias=True, mode="json", exclude_none=True) if params else {}
    timeout = _argument(args, kwargs, _TIMEOUT_ARG, "request_read_timeout_seconds")
    if timeout is None:
        timeout = getattr(session, "_session_read_timeout_seconds", None)
    opts = {"timeout": timeout.total_seconds()} if isinstance(timeout, timedelta) else {}
    return root.method, wire, opts


def _begin(
    telemetry: Telemetry,
    state: SessionState,
    session: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> tuple[RequestRecord | None, Slot | None, tuple[Any, ...], dict[str, Any]]:
    """Start the request's record, learn its id, tap its progress callback (fenced)."""
    try:
        method, params, opts = _wire_request(session, args, kwargs)
        slot = _state.SLOT.get()
        if slot is not None and (slot.record is not None or slot.method not in (None, method)):
            slot = None
        record = _request_hooks.begin_request(
            telemetry, state, method, params, opts=opts, slot=slot
        )
    except Exception:
        _logger.debug(
            "mcp_health: request start failed; the application is unaffected", exc_info=True
        )
        return None, None, args, kwargs
    # The session takes ``_request_id`` as this request's id as soon as it is called.
    request_id = getattr(session, "_request_id", None)
    with fence("request id"):
        _request_hooks.learn_request_id(record, request_id)
    with fence("request taken"):
        _request_hooks.taken_by_session(record)
    callback = _argument(args, kwargs, _PROGRESS_ARG, "progress_callback")
    if callback is None:
        return record, slot, args, kwargs
    try:
        tapped = _request_hooks.progress_tap(record, callback)
    except Exception:
        _logger.debug(
            "mcp_health: progress tap failed; the application is unaffected", exc_info=True
        )
        return record, slot, args, kwargs
    if len(args) > _PROGRESS_ARG:
        return record, slot, (*args[:_PROGRESS_ARG], tapped, *args[_PROGRESS_ARG + 1 :]), kwargs
    return record, slot, args, {**kwargs, "progress_callback": tapped}


async def send_request(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """``ClientSession.send_request`` (``BaseSession``'s): one record and span per request."""
    state = _state.SESSIONS.get(instance)
    telemetry = active(configured)
    record: RequestRecord | None = None
    slot: Slot | None = None
    if state is not None and telemetry is not None:
        record, slot, args, kwargs = _begin(telemetry, state, instance, args, kwargs)
    if record is None or telemetry is None:
        return await wrapped(*args, **kwargs)
    return await _dispatch_wrappers.run_request(telemetry, record, wrapped, args, kwargs, slot=slot)


def _notification_method(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    notification = _argument(args, kwargs, 0, "notification")
    return getattr(getattr(notification, "root", notification), "method", None)


async def received_notification(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """``ClientSession._received_notification``: inbound server notifications."""
    method = _notification_method(args, kwargs)
    return await _wrappers.notified(configured, wrapped, instance, args, kwargs, method=method)


async def received_request(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """``ClientSession._received_request``: server-initiated requests (elicitation)."""
    responder = _argument(args, kwargs, 0, "responder")
    request = getattr(responder, "request", None)
    method = getattr(getattr(request, "root", request), "method", None)
    return await _wrappers.requested(configured, wrapped, instance, args, kwargs, method=method)


async def handle_post_request(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """``StreamableHTTPTransport._handle_post_request`` (1.x): server identity, session id,
    HTTP status and failures of the POST that carries a request."""
    post_ctx = _argument(args, kwargs, 0, "ctx")
    record: RequestRecord | None = None
    if active(configured) is not None:
        try:
            record = _transport_hooks.wire_request_of(post_ctx)
        except Exception:
            _logger.debug("mcp_health: POST lookup failed; ignored", exc_info=True)
    if record is None or record.ended:
        return await wrapped(*args, **kwargs)
    return await post_for(record, wrapped, instance, args, kwargs)
