"""What every framework hook reports through: the instrumentation's install record (private)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from otel_mcp_health.frameworks import _hooks

_logger = logging.getLogger(__name__)


def report_install(source: Any, tools: list[Any]) -> None:
    """Record that a framework hands these MCP tool definitions to its model.

    ``source``: the session they were listed in (a ``ClientSession``, an object with a
    ``.session``, or the instrumentation's own session state). Never raises.
    """
    if source is None:
        return
    try:
        from otel_mcp_health.instrumentation import record_installed_tools

        record_installed_tools(source, tools)
    except Exception:  # the framework's install must go on whatever happens to our record
        _logger.debug("otel-mcp-health: framework install record failed", exc_info=True)


#: (framework, what) pairs already warned about: each unexpected shape is one warning a process.
_WARNED: set[tuple[str, str]] = set()


def unexpected(framework: str, what: str) -> None:
    """A framework handed a hook something of a shape it does not know: say so once (a warning
    naming the framework), so an install that goes unrecorded is never silent. Never raises."""
    if (framework, what) in _WARNED:
        return
    _WARNED.add((framework, what))
    _logger.warning(
        "otel-mcp-health: %s: %s; these installs are not recorded (the catalog is judged on the "
        "discovery result).",
        framework,
        what,
    )


#: ``report(instance, args, kwargs, result)``: what a hook reports once the wrapped call returned.
AfterCall = Callable[[Any, tuple[Any, ...], dict[str, Any], Any], None]


def after_call(report: AfterCall) -> _hooks.Wrapper:
    """A hook that lets the wrapped call finish, then ``report`` s the instance, the arguments
    and the result (a call that raises reports nothing)."""

    def _after(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        result = wrapped(*args, **kwargs)
        report(instance, args, kwargs, result)
        return result

    return _after


def after_await(report: AfterCall) -> _hooks.Wrapper:
    """:func:`after_call` for a coroutine: awaits it, then reports."""

    async def _after(
        wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        result = await wrapped(*args, **kwargs)
        report(instance, args, kwargs, result)
        return result

    return _after


#: What a listing hook collects into: a fresh list inside the outer call, ``None`` outside it.
Collected = ContextVar[list[Any] | None]
#: ``report(result, collected, listing)``: what the outer call reports once it returned.
Reporter = Callable[[Any, list[Any], Any], None]
Wrapper = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Awaitable[Any]]


async def after_listing(
    wrapped: Callable[..., Awaitable[Any]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    report: Callable[[Any, Any], None],
) -> Any:
    """Await ``wrapped`` with the instrumentation's latest application listing cleared, then
    ``report`` its result and the listing made meanwhile: the install a framework reports is
    tied to the listing its own call caused, never to an earlier one."""
    from otel_mcp_health.instrumentation import LISTING

    listing = LISTING.set(None)
    try:
        result = await wrapped(*args, **kwargs)
        report(result, LISTING.get())
        return result
    finally:
        LISTING.reset(listing)


async def collecting(
    collected: Collected,
    wrapped: Callable[..., Awaitable[Any]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    report: Reporter,
) -> Any:
    """:func:`after_listing` with a fresh list in ``collected`` for the inner hooks to fill;
    ``report`` gets the result, the list and the listing."""
    items: list[Any] = []
    token = collected.set(items)
    try:
        return await after_listing(
            wrapped, args, kwargs, lambda result, listing: report(result, items, listing)
        )
    finally:
        collected.reset(token)


def appending_to(collected: Collected) -> Wrapper:
    """A hook that appends each result of the wrapped coroutine to ``collected`` (when set)."""

    async def _append(
        wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        result = await wrapped(*args, **kwargs)
        items = collected.get()
        if items is not None:
            items.append(result)
        return result

    return _append
