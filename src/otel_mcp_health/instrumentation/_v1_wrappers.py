"""Wrappers of the mcp 1.x client, where the SDK emits no spans (private).

The rules of :mod:`._shell` apply. On 1.x ``BaseSession.send_request`` is where every client
request passes: it takes the next JSON-RPC id, writes the request, waits for the answer and
validates it into a typed result. Its wrapper here starts the one CLIENT span of the request (or
enriches an outer library's CLIENT span, as on 2.x) and learns the id before the write.

The 1.x transports carry no context with a message: the streamable HTTP POST runs in the
transport's own task, and its wrapper finds the request by id in the session whose inbound stream
the transport answers into (``_streamable_http.handle_post_request_v1``). Server notifications and
requests arrive through ``_received_notification`` / ``_received_request`` (the 2.x
``_on_notify`` / ``_on_request``; ``_notifications.received_notification``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from otel_mcp_health.instrumentation import _dispatch_wrappers, _request_hooks, _state
from otel_mcp_health.instrumentation._sdk import HANDSHAKE_METHODS
from otel_mcp_health.instrumentation._shell import Args, Kwargs, argument, fence
from otel_mcp_health.instrumentation._state import Telemetry

#: ``BaseSession.send_request(request, result_type, request_read_timeout_seconds, metadata,
#: progress_callback)``: positions of the arguments read here.
_TIMEOUT_ARG, _PROGRESS_ARG = 2, 4


#: The params a request's evidence reads besides a handshake's: the tool or prompt name, the
#: page cursor. Read off the typed model, so a call's arguments are never dumped.
_READ_PARAMS = ("name", "cursor")


def _wire_params(method: Any, params: Any) -> dict[str, Any]:
    """The wire params the evidence reads: a handshake's whole (rare; its version sits in
    ``_meta``), any other request's named fields only (no pydantic dump per call)."""
    if params is None:
        return {}
    if method in HANDSHAKE_METHODS:
        return params.model_dump(by_alias=True, mode="json", exclude_none=True)  # type: ignore[no-any-return]
    # Through __dict__: a getattr miss on a model is slow (docs/performance.md).
    fields = getattr(params, "__dict__", None) or {}
    return {key: fields[key] for key in _READ_PARAMS if fields.get(key) is not None}


def _wire_request(session: Any, args: Args, kwargs: Kwargs) -> Args:
    """Method, wire params and call options of a 1.x typed request (kept in memory only)."""
    request = argument(args, kwargs, 0, "request")
    root = getattr(request, "root", request)
    wire = _wire_params(root.method, getattr(root, "params", None))
    timeout = argument(args, kwargs, _TIMEOUT_ARG, "request_read_timeout_seconds")
    if timeout is None:
        timeout = getattr(session, "_session_read_timeout_seconds", None)
    opts = {"timeout": timeout.total_seconds()} if isinstance(timeout, timedelta) else {}
    return root.method, wire, opts


async def send_request(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``ClientSession.send_request`` (``BaseSession``'s): one record and span per request; learns
    its id before the write."""
    state = _state.SESSIONS.get(instance)
    telemetry = _dispatch_wrappers.enabled(configured) if state is not None else None
    started = (
        _dispatch_wrappers.begin(telemetry, state, lambda: _wire_request(instance, args, kwargs))
        if telemetry is not None and state is not None
        else None
    )
    if started is None:
        return await wrapped(*args, **kwargs)
    telemetry, record, slot = started
    # The session takes ``_request_id`` as this request's id as soon as it is called.
    request_id = getattr(instance, "_request_id", None)
    with fence("request id"):
        _request_hooks.learn_request_id(record, request_id)
    with fence("request taken"):
        _request_hooks.taken_by_session(record)
    args, kwargs = _dispatch_wrappers.progress_tapped(
        record, args, kwargs, at=_PROGRESS_ARG, name="progress_callback"
    )
    return await _dispatch_wrappers.run_request(telemetry, record, wrapped, args, kwargs, slot=slot)
