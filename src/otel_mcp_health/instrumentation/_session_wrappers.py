"""Wrappers of ``ClientSession`` and ``mcp.Client``: a session's end, its requests and tool
calls, the server's messages to it, and a stdio server's start (private; the rules every wrapper
follows: :mod:`._shell`).

Span ownership: the dispatcher wrapper (``send_raw_request``, :mod:`._dispatch_wrappers`) starts
the one CLIENT span of every client request and makes it current, and the replaced
``mcp.shared.jsonrpc_dispatcher.otel_span`` hands that span to the SDK instead of creating a
second one (so the SDK's trace-context injection uses it, and its status description -- a server
message -- never lands on it). An outer wrapper (``call_tool``, ``send_request``) that must see
what happens after the dispatcher returned (result validation, the output-schema check) claims
the span through a :class:`~._state.Slot` and ends it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from otel_mcp_health.instrumentation import (
    _outcomes,
    _request_hooks,
    _result_hooks,
    _session_hooks,
    _state,
)
from otel_mcp_health.instrumentation._shell import Args, Kwargs, active, argument, fence
from otel_mcp_health.instrumentation._state import Slot, Telemetry

_ELICITATION = "elicitation/create"

#: Reads the method of a server message from its handler's arguments (per SDK line).
MethodOf = Callable[[Args, Kwargs], Any]


# ----------------------------------------------------------------------------------------------
# ClientSession: its end, typed layer, call_tool, notifications
# ----------------------------------------------------------------------------------------------
async def session_aexit(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
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
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
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
        _request_hooks.before_call(state, slot, name, arguments)
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
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
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


def _method_argument(args: Args, kwargs: Kwargs) -> Any:
    """2.x ``_on_notify`` / ``_on_request``: the method is the handler's second argument."""
    return argument(args, kwargs, 1, "method")


@contextmanager
def _outside_requests() -> Iterator[None]:
    """A server message's handler may run in the context of the request that carried it; what
    the application does in it (e.g. re-list after ``list_changed``) is its own request."""
    internal_token = _state.INTERNAL.set(False)
    slot_token = _state.SLOT.set(None)
    try:
        yield
    finally:
        _state.SLOT.reset(slot_token)
        _state.INTERNAL.reset(internal_token)


async def notified(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
    *,
    method_of: MethodOf = _method_argument,
) -> Any:
    """A server notification reached the session (``list_changed``); ``method_of`` reads its
    method (2.x ``ClientSession._on_notify`` by default; 1.x: ``_v1_wrappers``)."""
    telemetry = active(configured)
    if telemetry is None:
        return await wrapped(*args, **kwargs)
    method = method_of(args, kwargs)
    with fence("notification"):
        _session_hooks.on_notification(telemetry, instance, method)
    with _outside_requests():
        return await wrapped(*args, **kwargs)


async def requested(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
    *,
    method_of: MethodOf = _method_argument,
) -> Any:
    """The server sent the session a request, answered by the application; ``method_of`` as in
    :func:`notified` (2.x ``ClientSession._on_request`` by default).

    An ``elicitation/create`` during a ``tools/call`` means the call waits on a person.
    """
    if active(configured) is None:
        return await wrapped(*args, **kwargs)
    waiting = method_of(args, kwargs) == _ELICITATION
    record = _state.REQUEST.get()
    if waiting:
        with fence("waiting for user"):
            _session_hooks.waiting_for_user(instance, record, True)
    try:
        with _outside_requests():
            return await wrapped(*args, **kwargs)
    finally:
        if waiting:
            with fence("waiting for user"):
                _session_hooks.waiting_for_user(instance, record, False)


async def client_call_tool(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
) -> Any:
    """``mcp.Client.call_tool``: its ``HEADER_MISMATCH`` re-list is the SDK's, not a discovery."""
    if active(configured) is None:
        return await wrapped(*args, **kwargs)
    token = _state.INTERNAL.set(True)
    try:
        return await wrapped(*args, **kwargs)
    finally:
        _state.INTERNAL.reset(token)


# ----------------------------------------------------------------------------------------------
# stdio: learn that a session runs over a pipe
# ----------------------------------------------------------------------------------------------
async def stdio_process(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
) -> Any:
    """``mcp.client.stdio._create_platform_compatible_process``: awaited by ``stdio_client``,
    whose frame (this coroutine's caller) holds the streams it yields; the session built over
    that very write stream is a pipe, and no other session (``_session_hooks.stdio_spawned``).
    """
    caller = sys._getframe(1)  # noqa: SLF001 - the stdio_client frame that owns the streams (the only way to see them)
    process = await wrapped(*args, **kwargs)
    if active(configured) is not None:
        command, argv, env, cwd = map(kwargs.get, ("command", "args", "env", "cwd"))
        with fence("stdio mark"):
            _session_hooks.stdio_spawned(caller, command, argv, env, cwd)
    return process
