"""Wrappers of ``ClientSession`` and ``mcp.Client``: a session's end, its requests and tool
calls (private; the rules every wrapper follows: :mod:`._shell`; the server's messages to a
session: :mod:`._notifications`).

Span ownership: the dispatcher wrapper (``send_raw_request``, :mod:`._dispatch_wrappers`) starts
the one CLIENT span of every client request and makes it current, and the replaced
``mcp.shared.jsonrpc_dispatcher.otel_span`` hands that span to the SDK instead of creating a
second one (so the SDK's trace-context injection uses it, and its status description -- a server
message -- never lands on it). An outer wrapper (``call_tool``, ``send_request``) that must see
what happens after the dispatcher returned (result validation, the output-schema check) claims
the span through a :class:`~._state.Slot` and ends it.
"""

from __future__ import annotations

from typing import Any

from otel_mcp_health.instrumentation import (
    _call_checks,
    _outcomes,
    _request_hooks,
    _result_hooks,
    _session_hooks,
    _state,
)
from otel_mcp_health.instrumentation._shell import Args, Kwargs, active, argument, fence
from otel_mcp_health.instrumentation._state import Slot, Telemetry


# ----------------------------------------------------------------------------------------------
# ClientSession: its end, typed layer, call_tool
# ----------------------------------------------------------------------------------------------
async def session_aexit(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``ClientSession.__aexit__``: ``mcp.client.session.duration``."""
    telemetry = active(configured)
    if telemetry is None:
        return await wrapped(*args, **kwargs)
    exc = argument(args, kwargs, 1, "exc_val")
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as raised:
        with fence("session end"):
            _session_hooks.session_ended(telemetry, instance, raised)
        raise
    with fence("session end"):
        _session_hooks.session_ended(telemetry, instance, exc)
    return result


def _finish_slot(telemetry: Telemetry, slot: Slot, exc: BaseException | None) -> None:
    if (record := slot.record) is None:
        return
    if exc is not None:
        with fence("request error"):
            _result_hooks.on_error(record, exc)
    with fence("request end"):
        _request_hooks.finish(telemetry, record)


def send_request(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``ClientSession.send_request``: keep the span open through result validation.

    With nothing to add, the SDK's own awaitable is handed back as it is (no extra coroutine).
    """
    current = _state.SLOT.get()
    if current is not None and current.record is None:  # an outer wrapper's slot: it ends it
        return wrapped(*args, **kwargs)
    telemetry = active(configured)
    if telemetry is None or instance not in _state.SESSIONS:
        return wrapped(*args, **kwargs)
    return _claimed_request(telemetry, wrapped, args, kwargs)


async def _claimed_request(telemetry: Telemetry, wrapped: Any, args: Args, kwargs: Kwargs) -> Any:
    slot = Slot(method=None)
    token = _state.SLOT.set(slot)
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as exc:
        _finish_slot(telemetry, slot, exc)
        raise
    finally:
        _state.SLOT.reset(token)
    _finish_slot(telemetry, slot, None)
    return result


def call_tool(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``ClientSession.call_tool``: contract check, output-schema verdict, internal lists (an
    unobserved session's own awaitable is handed back as it is: no frame of ours)."""
    telemetry, state = active(configured), _state.SESSIONS.get(instance)
    if telemetry is None or state is None:
        return wrapped(*args, **kwargs)
    return _observed_call(telemetry, state, wrapped, args, kwargs)


async def _observed_call(
    telemetry: Telemetry, state: _state.SessionState, wrapped: Any, args: Args, kwargs: Kwargs
) -> Any:
    slot = Slot(method="tools/call")
    name, arguments = argument(args, kwargs, 0, "name"), argument(args, kwargs, 1, "arguments")
    with fence("contract check"):
        _call_checks.before_call(state, slot, name, arguments)
    with fence("retry check"):
        _outcomes.before_call(state, slot, name, arguments)
    slot_token, internal_token = _state.SLOT.set(slot), _state.INTERNAL.set(True)
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as exc:
        _finish_slot(telemetry, slot, exc)
        if slot.record is not None:
            with fence("unreconciled"):
                _outcomes.after_failure(slot.record, slot, name)
        raise
    finally:
        _state.INTERNAL.reset(internal_token)
        _state.SLOT.reset(slot_token)
    if slot.record is not None:
        with fence("outcome"):
            _outcomes.after_success(slot.record, slot, name, arguments, result)
    _finish_slot(telemetry, slot, None)
    return result


async def validate_tool_result(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``ClientSession.validate_tool_result``: the SDK's output-schema check, raised after the
    request span's dispatcher block ended -- attributed here to the still-open ``tools/call`` span.

    Only ``call_tool`` sets a ``tools/call`` slot, and only while instrumentation is enabled.
    """
    slot = _state.SLOT.get()
    if slot is None or slot.method != "tools/call":
        return await wrapped(*args, **kwargs)
    name = argument(args, kwargs, 0, "name")
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as exc:
        with fence("output schema"):
            _request_hooks.output_schema_checked(slot, instance, name, exc)
        raise
    with fence("output schema"):
        _request_hooks.output_schema_checked(slot, instance, name, None)
    return result


async def client_call_tool(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``mcp.Client.call_tool``: its ``HEADER_MISMATCH`` re-list is the SDK's, not a discovery."""
    if active(configured) is None:
        return await wrapped(*args, **kwargs)
    token = _state.INTERNAL.set(True)
    try:
        return await wrapped(*args, **kwargs)
    finally:
        _state.INTERNAL.reset(token)
