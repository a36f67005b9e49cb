"""The rules every wrapper of the SDK follows, the fence, and the factories of the repeated
wrapper shapes (private).

Rules every wrapper follows (the host comes first):

* It calls ``wrapped(*args, **kwargs)`` exactly once, returns its result object unchanged and lets
  its exception propagate unchanged (same object); an ``except BaseException`` only observes and
  re-raises.
* Everything of ours runs through a hook module (:data:`._compat.HOOK_MODULES`), one call per
  ``with fence("what"):`` block, which logs an ``Exception`` at debug level and drops it, so a bug
  in our code can never reach the application. A transport's home holds its wrappers beside its
  hooks: its ``WRAPPERS`` names the wrapper code, and every other public function there is a hook.
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
from collections.abc import Callable
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any

import wrapt
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_mcp_health.instrumentation._state import Telemetry

_logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    ObjectProxy = wrapt.ObjectProxy[Any]
else:  # wrapt 1.x's ObjectProxy is not subscriptable at run time
    ObjectProxy = wrapt.ObjectProxy

#: The wrapped call's positional and keyword arguments, as wrapt hands them to a wrapper.
Args = tuple[Any, ...]
Kwargs = dict[str, Any]
Wrapper = Callable[[Any, Any, Args, Kwargs], Any]
#: A wrapper before the instrumentor binds its configuration.
UnboundWrapper = Callable[[Telemetry, Any, Any, Args, Kwargs], Any]


def bind(wrapper: UnboundWrapper, configured: Telemetry) -> Wrapper:
    """The wrapper closed over ``configured``."""
    return functools.partial(wrapper, configured)


def active(configured: Telemetry) -> Telemetry | None:
    """The wrapper's configuration, or ``None`` inside ``suppress_instrumentation()``."""
    return configured if is_instrumentation_enabled() else None


def argument(args: Args, kwargs: Kwargs, index: int, name: str) -> Any:
    """The wrapped call's argument at position ``index`` or keyword ``name`` (``None``: absent)."""
    return args[index] if len(args) > index else kwargs.get(name)


class _Fence:
    """The host-first fence around one call of our own logic: an ``Exception`` raised in the
    block is logged at debug level and forgotten; anything else (a cancellation) passes. It
    holds nothing but its name, so one per name serves every block, task and thread."""

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


#: One fence per name (the names are the literals of the ``with fence(...)`` blocks).
_FENCES: dict[str, _Fence] = {}


def fence(what: str) -> _Fence:
    """The fence named ``what``: ``with fence("what"): hooks.call(...)``, one ``with`` per hook
    call, so each fenced call stays visible where it is made."""
    found = _FENCES.get(what)
    if found is None:
        found = _FENCES[what] = _Fence(what)
    return found


#: The hooks the factory-built wrappers call (module, function), for the seam's test.
FACTORY_HOOKS: list[tuple[ModuleType, str]] = []


def after(
    hooks: ModuleType,
    hook: str,
    what: str,
    *,
    awaited: bool,
    telemetry: bool = False,
    result: bool = False,
) -> UnboundWrapper:
    """A wrapper of the shape "call the SDK, then one fenced hook": the SDK's call (awaited when
    ``awaited``) runs first, and unless instrumentation is suppressed, ``hooks.<hook>`` is called
    with the configuration (when ``telemetry``), the wrapped object, and the call's result (when
    ``result``). What the SDK returned or raised reaches the caller unchanged."""
    FACTORY_HOOKS.append((hooks, hook))
    observe = _observer(hooks, hook, what, telemetry=telemetry, result=result)
    if awaited:

        async def awaiting(
            configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
        ) -> Any:
            value = await wrapped(*args, **kwargs)
            observe(configured, instance, value)
            return value

        return awaiting

    def calling(
        configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
    ) -> Any:
        value = wrapped(*args, **kwargs)
        observe(configured, instance, value)
        return value

    return calling


def _observer(
    hooks: ModuleType, hook: str, what: str, *, telemetry: bool, result: bool
) -> Callable[[Telemetry, Any, Any], None]:
    """The fenced call of ``hooks.<hook>`` after the SDK's call, looked up at call time (so a
    test can make it raise)."""

    def observe(configured: Telemetry, instance: Any, value: Any) -> None:
        active_telemetry = active(configured)
        if active_telemetry is None:
            return
        arguments = (active_telemetry, instance) if telemetry else (instance,)
        if result:
            arguments = (*arguments, value)
        with fence(what):
            getattr(hooks, hook)(*arguments)

    return observe
