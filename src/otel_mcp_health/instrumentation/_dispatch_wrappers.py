"""Wrappers of the SDK's dispatchers: one record and one CLIENT span per request (private).

The rules of :mod:`._shell` apply. The dispatcher wrapper (``send_raw_request``) starts the one
CLIENT span of every client request and makes it current; the replaced
``mcp.shared.jsonrpc_dispatcher.otel_span`` hands that span to the SDK instead of creating a
second one; ``_write`` tells a cancellation before the write (no call) from one after it (silence).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import _request_hooks, _result_hooks, _state
from otel_mcp_health.instrumentation._shell import (
    Args,
    Kwargs,
    ObjectProxy,
    active,
    argument,
    fence,
)
from otel_mcp_health.instrumentation._state import RequestRecord, Slot, Telemetry

_logger = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------
# Dispatchers: one record (and one CLIENT span) per request
# ----------------------------------------------------------------------------------------------
#: A started request: the wrapper's configuration, the request's record and the outer wrapper's
#: :class:`Slot` that claims it (if any).
Started = tuple[Telemetry, RequestRecord, Slot | None]


def enabled(configured: Telemetry) -> Telemetry | None:
    """The wrapper's configuration, or ``None`` inside ``suppress_instrumentation()``: checked
    once per request. An outer wrapper's unclaimed :class:`Slot` in this context (``call_tool``,
    ``send_request``) means the outer wrapper checked it as its request began, and only the
    SDK's own code ran since."""
    slot = _state.SLOT.get()
    if slot is not None and slot.record is None:
        return configured
    return active(configured)


def begin(
    telemetry: Telemetry,
    state: _state.SessionState,
    wire: Callable[[], tuple[Any, Any, Any]],
) -> Started | None:
    """Start the record of a tracked session's request from its ``wire()`` method, params and
    call options (``None``: anything failed, fenced); the caller checked that instrumentation
    is enabled (:func:`enabled`)."""
    try:
        method, params, opts = wire()
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
        return None
    return telemetry, record, slot


def progress_tapped(
    record: RequestRecord,
    args: Args,
    kwargs: Kwargs,
    *,
    at: int,
    name: str,
    key: str | None = None,
) -> tuple[Args, Kwargs]:
    """The call's arguments with its progress callback routed through the record's tap (fenced:
    unchanged when that fails): the argument at position ``at`` or keyword ``name``, or that
    argument's ``key`` where it is a mapping of call options."""
    try:
        value = argument(args, kwargs, at, name)
        callback = value
        if key is not None:
            callback = value.get(key) if isinstance(value, Mapping) else None
        if callback is None:
            return args, kwargs
        tapped = _request_hooks.progress_tap(record, callback)
        value = tapped if key is None else {**value, key: tapped}
    except Exception:
        _logger.debug(
            "mcp_health: progress tap failed; the application is unaffected", exc_info=True
        )
        return args, kwargs
    if len(args) > at:
        return (*args[:at], value, *args[at + 1 :]), kwargs
    return args, {**kwargs, name: value}


def _wire_request(args: Args, kwargs: Kwargs) -> tuple[Any, Any, Any]:
    """``send_raw_request(method, params, opts)``: already the wire shapes."""
    method, params = argument(args, kwargs, 0, "method"), argument(args, kwargs, 1, "params")
    return method, params, argument(args, kwargs, 2, "opts")


def send_raw_request(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``JSONRPCDispatcher.send_raw_request`` and ``DirectDispatcher.send_raw_request``.

    Server-side dispatchers in this process, untracked sessions and suppressed calls get the SDK's
    own awaitable as it is (no frame of ours in their tracebacks)."""
    state = _state.DISPATCHERS.get(instance)
    if state is None or enabled(configured) is None:
        return wrapped(*args, **kwargs)
    return _tracked_request(configured, state, wrapped, args, kwargs)


async def _tracked_request(
    configured: Telemetry, state: _state.SessionState, wrapped: Any, args: Args, kwargs: Kwargs
) -> Any:
    started = begin(configured, state, lambda: _wire_request(args, kwargs))
    if started is None:
        # Starting the record failed (fenced, logged): the request goes through unobserved.
        return await wrapped(*args, **kwargs)
    telemetry, record, slot = started
    args, kwargs = progress_tapped(record, args, kwargs, at=2, name="opts", key="on_progress")
    return await run_request(telemetry, record, wrapped, args, kwargs, slot=slot)


async def run_request(
    telemetry: Telemetry,
    record: RequestRecord,
    wrapped: Any,
    args: Args,
    kwargs: Kwargs,
    *,
    slot: Slot | None,
) -> Any:
    """Send the request with its record (and span) current; its outcome goes to the hooks.

    Without a claiming :class:`Slot` the span ends here; with one, the outer wrapper ends it.
    """
    if slot is not None:
        slot.record = record
    request_token = _state.REQUEST.set(record)
    slot_token = _state.SLOT.set(None)
    context_token = otel_context.attach(trace.set_span_in_context(record.span))
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as exc:
        with fence("request error"):
            _result_hooks.on_error(record, exc)
        if slot is None:
            with fence("request end"):
                _request_hooks.finish(telemetry, record)
        raise
    finally:
        otel_context.detach(context_token)
        _state.SLOT.reset(slot_token)
        _state.REQUEST.reset(request_token)
    with fence("request result"):
        _result_hooks.on_result(telemetry, record, result)
    if slot is None:
        with fence("request end"):
            _request_hooks.finish(telemetry, record)
    return result


def otel_span(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
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
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``JSONRPCDispatcher._dispatch_notification`` (sync): progress naming another token."""
    if active(configured) is not None and instance in _state.DISPATCHERS:
        message = argument(args, kwargs, 0, "msg")
        sender_ctx = argument(args, kwargs, 3, "sender_ctx")
        with fence("inbound progress"):
            _request_hooks.on_inbound_progress(instance, message, sender_ctx)
    return wrapped(*args, **kwargs)


def make_context(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``DirectDispatcher._make_context`` (sync): the in-process peer minted the request's id.

    The client's ``send_raw_request`` awaits the peer's handler directly, so the record in
    context is the request the peer is about to handle (never a request the server sends back:
    that one is minted by the client's own dispatcher, which is skipped here).
    """
    record = _state.REQUEST.get()  # begun with instrumentation enabled (checked once)
    if (
        record is not None
        and record.request_id is None
        and _state.DISPATCHERS.get(getattr(instance, "_peer", None)) is record.state
    ):
        request_id = argument(args, kwargs, 1, "request_id")
        with fence("request id"):
            _request_hooks.learn_request_id(record, request_id)
    return wrapped(*args, **kwargs)


def dispatcher_write(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``JSONRPCDispatcher._write``: the moment a request may reach the server (a cancellation
    before it is no call, after it is silence). Observed as the write is called; the SDK's own
    awaitable is handed back as it is (no extra coroutine on every write)."""
    record = _state.REQUEST.get()  # begun with instrumentation enabled (checked once)
    # Once the request itself was written (``on_write``), later writes pass untouched.
    if record is not None and not record.write_seen:
        message = argument(args, kwargs, 0, "message")
        with fence("request write"):
            _request_hooks.on_write(record, message)
    return wrapped(*args, **kwargs)


@contextmanager
def _claimed_span(record: RequestRecord, attributes: Mapping[str, Any]) -> Iterator[Any]:
    with fence("sdk span"):
        _request_hooks.on_sdk_span(record, attributes)
    try:
        yield _SdkSpanView(record.span)
    except BaseException as exc:
        with fence("sdk span exit"):
            _request_hooks.on_sdk_span_exit(record, exc)
        raise
    with fence("sdk span exit"):
        _request_hooks.on_sdk_span_exit(record, None)


class _SdkSpanView(ObjectProxy):
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
