"""The wrapt wrappers: the only code that calls into the MCP SDK on the host's behalf (private).

Rules every wrapper here follows (the host comes first):

* It calls ``wrapped(*args, **kwargs)`` exactly once, returns its result object unchanged and lets
  its exception propagate unchanged (same object); an ``except BaseException`` only observes and
  re-raises.
* Everything of ours runs through a hook module (:data:`HOOK_MODULES`) inside a ``try/except
  Exception`` fence that logs
  at debug level, so a bug in our code can never reach the application.
* When uninstrumented (``_state.TELEMETRY is None``), inside ``suppress_instrumentation()``, or on a
  server-side object, a wrapper is a plain pass-through.

Span ownership: the dispatcher wrapper (``send_raw_request``) starts the one CLIENT span of every
client request and makes it current, and the replaced ``mcp.shared.jsonrpc_dispatcher.otel_span``
hands that span to the SDK instead of creating a second one (so the SDK's trace-context injection
uses it, and its status description -- a server message -- never lands on it). An outer wrapper
(``call_tool``, ``send_request``) that must see what happens after the dispatcher returned (result
validation, the output-schema check) claims the span through a :class:`~._state.Slot` and ends it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import wrapt
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import (
    _catalog_hooks,
    _outcomes,
    _request_hooks,
    _result_hooks,
    _session_hooks,
    _state,
    _transport_hooks,
)
from otel_mcp_health.instrumentation._state import RequestRecord, Slot, Telemetry

_logger = logging.getLogger(__name__)

#: The extraction seam: every function of ours a wrapper calls, always through these modules'
#: attributes (a test makes each one raise and proves the host sees no difference).
HOOK_MODULES = (_session_hooks, _request_hooks, _result_hooks, _catalog_hooks, _transport_hooks)

Wrapper = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]

_ELICITATION = "elicitation/create"


def _active() -> Telemetry | None:
    telemetry = _state.TELEMETRY
    if telemetry is None or not is_instrumentation_enabled():
        return None
    return telemetry


def _fenced(what: str, fn: Callable[..., object], *args: Any) -> None:
    """Run one piece of our own logic; any failure is logged at debug level and forgotten."""
    try:
        fn(*args)
    except Exception:
        _logger.debug("mcp_health: %s failed; the application is unaffected", what, exc_info=True)


# ----------------------------------------------------------------------------------------------
# Dispatchers: one record (and one CLIENT span) per request
# ----------------------------------------------------------------------------------------------
def _bind_request(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, Any]:
    method = args[0] if args else kwargs.get("method")
    params = args[1] if len(args) > 1 else kwargs.get("params")
    opts = args[2] if len(args) > 2 else kwargs.get("opts")
    return method, params, opts


def _begin(
    telemetry: Telemetry, state: _state.SessionState, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[RequestRecord | None, Slot | None, tuple[Any, ...], dict[str, Any]]:
    """Start the request's record; route its progress callback through our tap (fenced)."""
    try:
        method, params, opts = _bind_request(args, kwargs)
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
    try:
        callback = opts.get("on_progress") if isinstance(opts, Mapping) else None
        if callback is not None:
            tapped = dict(opts)
            tapped["on_progress"] = _request_hooks.progress_tap(record, callback)
            if len(args) > 2:
                args = (*args[:2], tapped, *args[3:])
            else:
                kwargs = {**kwargs, "opts": tapped}
    except Exception:
        _logger.debug(
            "mcp_health: progress tap failed; the application is unaffected", exc_info=True
        )
    return record, slot, args, kwargs


async def send_raw_request(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``JSONRPCDispatcher.send_raw_request`` and ``DirectDispatcher.send_raw_request``."""
    state = _state.DISPATCHERS.get(instance)
    telemetry = _active()
    record: RequestRecord | None = None
    slot: Slot | None = None
    if state is not None and telemetry is not None:
        record, slot, args, kwargs = _begin(telemetry, state, args, kwargs)
    if record is None or telemetry is None:
        # Server-side dispatchers in this process (and untracked sessions) pass straight through:
        # a client record visible in their context was entered already, so it is never claimed.
        return await wrapped(*args, **kwargs)
    if slot is not None:
        slot.record = record
    request_token = _state.REQUEST.set(record)
    slot_token = _state.SLOT.set(None)
    context_token = otel_context.attach(trace.set_span_in_context(record.span))
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as exc:
        _fenced("request error", _result_hooks.on_error, record, exc)
        if slot is None:
            _fenced("request end", _request_hooks.finish, telemetry, record)
        raise
    finally:
        otel_context.detach(context_token)
        _state.SLOT.reset(slot_token)
        _state.REQUEST.reset(request_token)
    _fenced("request result", _result_hooks.on_result, telemetry, record, result)
    if slot is None:
        _fenced("request end", _request_hooks.finish, telemetry, record)
    return result


def otel_span(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``mcp.shared.jsonrpc_dispatcher.otel_span``: hand the SDK our span for a client request.

    Any other caller (server-side dispatchers, uninstrumented sessions) gets the SDK's own factory.
    """
    record = _state.REQUEST.get()
    attributes = kwargs.get("attributes")
    if (
        record is None
        or record.sdk_span_entered
        or not isinstance(attributes, Mapping)
        or attributes.get(A.MCP_METHOD_NAME) != record.method
    ):
        return wrapped(*args, **kwargs)
    return _claimed_span(record, attributes)


def dispatch_notification(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``JSONRPCDispatcher._dispatch_notification`` (sync): progress naming another token."""
    if _active() is not None and instance in _state.DISPATCHERS:
        message = args[0] if args else kwargs.get("msg")
        sender_ctx = args[3] if len(args) > 3 else kwargs.get("sender_ctx")
        _fenced(
            "inbound progress", _request_hooks.on_inbound_progress, instance, message, sender_ctx
        )
    return wrapped(*args, **kwargs)


async def dispatcher_write(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``JSONRPCDispatcher._write``: the moment a request may reach the server (a cancellation
    before it is no call, after it is silence)."""
    record = _state.REQUEST.get()
    if record is not None and _active() is not None:
        message = args[0] if args else kwargs.get("message")
        _fenced("request write", _request_hooks.on_write, record, message)
    return await wrapped(*args, **kwargs)


@contextmanager
def _claimed_span(record: RequestRecord, attributes: Mapping[str, Any]) -> Iterator[Any]:
    _fenced("sdk span", _request_hooks.on_sdk_span, record, attributes)
    try:
        yield _SdkSpanView(record.span)
    except BaseException as exc:
        _fenced("sdk span exit", _request_hooks.on_sdk_span_exit, record, exc)
        raise
    _fenced("sdk span exit", _request_hooks.on_sdk_span_exit, record, None)


class _SdkSpanView(wrapt.ObjectProxy[Any]):
    """Our span as the SDK sees it: the SDK's own error attributes and status are dropped.

    The SDK would copy the server's JSON-RPC error message into the status description (content,
    docs/model.md#privacy); our extraction records the code, the error class and an empty ERROR
    status instead.
    """

    def set_attribute(self, key: str, value: Any) -> None:
        """Dropped: evidence comes from the hook modules."""

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        """Dropped: evidence comes from the hook modules."""

    def set_status(self, status: Any, description: str | None = None) -> None:
        """Dropped: the status is set without a description when the span ends."""

    def record_exception(self, exception: BaseException, *args: Any, **kwargs: Any) -> None:
        """Dropped: exception events carry the class name only."""


# ----------------------------------------------------------------------------------------------
# ClientSession: session registry, typed layer, call_tool, notifications
# ----------------------------------------------------------------------------------------------
def session_init(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``ClientSession.__init__``: a new client session gets its state and random key."""
    result = wrapped(*args, **kwargs)
    if _active() is not None:
        _fenced("session registration", _session_hooks.register_session, instance)
    return result


async def session_aenter(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``ClientSession.__aenter__``: the session clock starts."""
    result = await wrapped(*args, **kwargs)
    if _active() is not None:
        _fenced("session start", _session_hooks.session_started, instance)
    return result


async def session_aexit(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``ClientSession.__aexit__``: ``mcp.client.session.duration``."""
    telemetry = _active()
    if telemetry is None:
        return await wrapped(*args, **kwargs)
    exc = args[1] if len(args) > 1 else kwargs.get("exc_val")
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as raised:
        _fenced("session end", _session_hooks.session_ended, telemetry, instance, raised)
        raise
    _fenced("session end", _session_hooks.session_ended, telemetry, instance, exc)
    return result


def _finish_slot(telemetry: Telemetry, slot: Slot, exc: BaseException | None) -> None:
    record = slot.record
    if record is None:
        return
    if exc is not None:
        _fenced("request error", _result_hooks.on_error, record, exc)
    _fenced("output schema", _request_hooks.on_validated, record, slot)
    _fenced("request end", _request_hooks.finish, telemetry, record)


async def send_request(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``ClientSession.send_request``: keep the span open through result validation."""
    telemetry = _active()
    current = _state.SLOT.get()
    if (
        telemetry is None
        or instance not in _state.SESSIONS
        or (current is not None and current.record is None)
    ):
        return await wrapped(*args, **kwargs)
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


async def call_tool(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``ClientSession.call_tool``: contract check, output-schema verdict, internal lists."""
    telemetry = _active()
    state = _state.SESSIONS.get(instance)
    if telemetry is None or state is None:
        return await wrapped(*args, **kwargs)
    slot = Slot(method="tools/call")
    name = args[0] if args else kwargs.get("name")
    arguments = args[1] if len(args) > 1 else kwargs.get("arguments")
    _fenced("contract check", _request_hooks.before_call, state, slot, name, arguments)
    _fenced("retry check", _outcomes.before_call, state, slot, name, arguments)
    slot_token = _state.SLOT.set(slot)
    internal_token = _state.INTERNAL.set(True)
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as exc:
        _finish_slot(telemetry, slot, exc)
        if slot.record is not None:
            _fenced("unreconciled", _outcomes.after_failure, slot.record, slot, name)
        raise
    finally:
        _state.INTERNAL.reset(internal_token)
        _state.SLOT.reset(slot_token)
    if slot.record is not None:
        _fenced("outcome", _outcomes.after_success, slot.record, slot, name, arguments, result)
    _finish_slot(telemetry, slot, None)
    return result


async def validate_tool_result(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``ClientSession.validate_tool_result``: the SDK's output-schema check, raised after the
    request span's dispatcher block ended -- attributed here to the still-open ``tools/call`` span.
    """
    slot = _state.SLOT.get()
    if _active() is None or slot is None or slot.method != "tools/call":
        return await wrapped(*args, **kwargs)
    name = args[0] if args else kwargs.get("name")
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as exc:
        _fenced("output schema", _request_hooks.output_schema_checked, slot, instance, name, exc)
        raise
    _fenced("output schema", _request_hooks.output_schema_checked, slot, instance, name, None)
    return result


async def on_notify(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``ClientSession._on_notify``: inbound server notifications (``list_changed``)."""
    telemetry = _active()
    if telemetry is None:
        return await wrapped(*args, **kwargs)
    method = args[1] if len(args) > 1 else kwargs.get("method")
    _fenced("notification", _session_hooks.on_notification, telemetry, instance, method)
    # The handler may run in the context of the request whose stream carried the notification;
    # whatever the application does in it (e.g. re-list after list_changed) is its own request.
    internal_token = _state.INTERNAL.set(False)
    slot_token = _state.SLOT.set(None)
    try:
        return await wrapped(*args, **kwargs)
    finally:
        _state.SLOT.reset(slot_token)
        _state.INTERNAL.reset(internal_token)


async def on_request(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``ClientSession._on_request``: server-initiated requests answered by the application.

    An ``elicitation/create`` during a ``tools/call`` means the call waits on a person. The
    handler runs outside any request scope of ours, like notification handlers.
    """
    if _active() is None:
        return await wrapped(*args, **kwargs)
    method = args[1] if len(args) > 1 else kwargs.get("method")
    waiting = method == _ELICITATION
    record = _state.REQUEST.get()
    if waiting:
        _fenced("waiting for user", _session_hooks.waiting_for_user, instance, record, True)
    internal_token = _state.INTERNAL.set(False)
    slot_token = _state.SLOT.set(None)
    try:
        return await wrapped(*args, **kwargs)
    finally:
        _state.SLOT.reset(slot_token)
        _state.INTERNAL.reset(internal_token)
        if waiting:
            _fenced("waiting for user", _session_hooks.waiting_for_user, instance, record, False)


async def client_call_tool(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``mcp.Client.call_tool``: its ``HEADER_MISMATCH`` re-list is the SDK's, not a discovery."""
    if _active() is None:
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
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``mcp.client.stdio._create_platform_compatible_process``: runs inside ``stdio_client`` in
    the caller's context (an async context manager's body runs in the task that enters it), so
    the mark it leaves is seen by the ``ClientSession`` built over the yielded streams.
    """
    process = await wrapped(*args, **kwargs)
    if _active() is not None:
        _fenced("stdio mark", _session_hooks.stdio_spawned)
    return process
