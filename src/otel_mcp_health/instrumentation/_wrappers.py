"""Wrappers of ``ClientSession`` and friends, and the rules every wrapper follows (private).

The dispatcher-level wrappers live in :mod:`._dispatch_wrappers`.

Rules every wrapper here follows (the host comes first):

* It calls ``wrapped(*args, **kwargs)`` exactly once, returns its result object unchanged and lets
  its exception propagate unchanged (same object); an ``except BaseException`` only observes and
  re-raises.
* Everything of ours runs through a hook module (:data:`HOOK_MODULES`), one call per
  ``with fence("what"):`` block, which logs an ``Exception`` at debug level and drops it, so a bug
  in our code can never reach the application.
* A wrapper closes over the configuration of the ``instrument()`` call that installed it (the
  instrumentor binds it, :func:`bind`); inside ``suppress_instrumentation()`` or on a server-side
  object, it is a plain pass-through. ``uninstrument()`` removes it.

Span ownership: the dispatcher wrapper (``send_raw_request``) starts the one CLIENT span of every
client request and makes it current, and the replaced ``mcp.shared.jsonrpc_dispatcher.otel_span``
hands that span to the SDK instead of creating a second one (so the SDK's trace-context injection
uses it, and its status description -- a server message -- never lands on it). An outer wrapper
(``call_tool``, ``send_request``) that must see what happens after the dispatcher returned (result
validation, the output-schema check) claims the span through a :class:`~._state.Slot` and ends it.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any

import wrapt
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_mcp_health.instrumentation import (
    _catalog_hooks,
    _outcomes,
    _request_hooks,
    _result_hooks,
    _session_hooks,
    _state,
    _transport_hooks,
)
from otel_mcp_health.instrumentation._state import Slot, Telemetry

_logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    ObjectProxy = wrapt.ObjectProxy[Any]
else:  # wrapt 1.x's ObjectProxy is not subscriptable at run time
    ObjectProxy = wrapt.ObjectProxy

#: The extraction seam: every function of ours a wrapper calls, always through these modules'
#: attributes. The contract of a hook module: every public function in it is a hook, called
#: through the module's attribute inside a fence, so a test can make each one raise and prove the
#: host sees no difference (the host comes first); a hook that observes a request records what it
#: saw as a fact of it (:mod:`otel_mcp_health.core.facts`) and decides nothing (the fold does, when
#: the request ends); nothing in a hook module reads argument values, result text, headers other
#: than ``WWW-Authenticate``'s ``error``/``scope`` or exception messages (docs/model.md#privacy).
HOOK_MODULES = (
    _session_hooks,
    _request_hooks,
    _result_hooks,
    _catalog_hooks,
    _transport_hooks,
    _outcomes,
)

#: The wrapped call's positional and keyword arguments, as wrapt hands them to a wrapper.
Args = tuple[Any, ...]
Kwargs = dict[str, Any]
Wrapper = Callable[[Any, Any, Args, Kwargs], Any]
#: A wrapper before the instrumentor binds its configuration.
UnboundWrapper = Callable[[Telemetry, Any, Any, Args, Kwargs], Any]


def bind(wrapper: UnboundWrapper, configured: Telemetry) -> Wrapper:
    """The wrapper closed over ``configured``."""
    return functools.partial(wrapper, configured)


_ELICITATION = "elicitation/create"


def active(configured: Telemetry) -> Telemetry | None:
    """The wrapper's configuration, or ``None`` inside ``suppress_instrumentation()``."""
    return configured if is_instrumentation_enabled() else None


def argument(args: Args, kwargs: Kwargs, index: int, name: str) -> Any:
    """The wrapped call's argument at position ``index`` or keyword ``name`` (``None``: absent)."""
    return args[index] if len(args) > index else kwargs.get(name)


#: Reads the method of a server message from its handler's arguments (per SDK line).
MethodOf = Callable[[Args, Kwargs], Any]


class fence:  # noqa: N801 - used like a function: ``with fence("what"): hooks.call(...)``
    """The host-first fence around one call of our own logic: an ``Exception`` raised in the
    block is logged at debug level and forgotten; anything else (a cancellation) passes. One
    ``with`` per hook call, so each fenced call stays visible where it is made."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        if kind is None or not issubclass(kind, Exception):
            return False
        _logger.debug(
            "mcp_health: %s failed; the application is unaffected",
            self.what,
            exc_info=(kind, exc, tb),  # type: ignore[arg-type]
        )
        return True


# ----------------------------------------------------------------------------------------------
# ClientSession: session registry, typed layer, call_tool, notifications
# ----------------------------------------------------------------------------------------------
def session_init(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
) -> Any:
    """``ClientSession.__init__``: a new client session gets its state and random key."""
    result = wrapped(*args, **kwargs)
    if active(configured) is not None:
        with fence("session registration"):
            _session_hooks.register_session(instance)
    return result


async def session_aenter(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
) -> Any:
    """``ClientSession.__aenter__``: the session clock starts."""
    result = await wrapped(*args, **kwargs)
    if active(configured) is not None:
        with fence("session start"):
            _session_hooks.session_started(instance)
    return result


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
