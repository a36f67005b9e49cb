"""Whether a hook point (a framework's or an mcp-private one) still has the shape its hook reads.

A hook is written against a shape, not a version: the hook point is present, it is a coroutine
function exactly when the hook's wrapper is one (an ``async`` wrapper awaits what it wraps; a
plain one uses the returned value as the result), and the leading parameters the hook reads
(``Patch.reads``: by position, or by name when passed as keywords) are still there, in that
order, and can be passed by position. Checked when wrapping, before anything is wrapped: a hook
point of another shape is never wrapped, so the framework's call cannot meet a hook that would
await a plain value, hand back a coroutine where a value was expected, or read the wrong
argument.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

#: Parameter kinds a hook can read both as ``args[i]`` and as ``kwargs[name]``.
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def mismatch(
    module: str, name: str, wrapper: Any, reads: tuple[str, ...], *, any_kind: bool = False
) -> str | None:
    """What about ``module``'s dotted ``name`` breaks the hook ``wrapper`` (which reads the
    leading parameters ``reads``), or None when it has the expected shape. ``any_kind``: the
    wrapper hands back what it wrapped returned without awaiting it, so a plain function and a
    coroutine function both fit. Never raises."""
    try:
        return _mismatch(module, name, wrapper, reads, any_kind)
    except Exception as error:  # noqa: BLE001 - an unreadable hook point is a mismatch too
        return f"cannot be inspected ({type(error).__name__})"


def _mismatch(
    module: str, name: str, wrapper: Any, reads: tuple[str, ...], any_kind: bool
) -> str | None:
    found = _hook_point(module, name)
    if found is None:
        return "is missing"
    function, method = found
    if not callable(function):
        return "is not callable"
    if not any_kind and (kind := _kind_mismatch(wrapper, function)) is not None:
        return kind
    if not reads:
        return None
    return _lacks(function, method, reads)


def _kind_mismatch(wrapper: Any, function: Any) -> str | None:
    awaited = inspect.iscoroutinefunction(wrapper)
    if awaited and not _is_async(function):
        return "is no longer a coroutine function (the hook awaits it)"
    if not awaited and _is_async(function):
        return "is now a coroutine function (the hook uses its return value)"
    return None


def _hook_point(module: str, name: str) -> tuple[Any, bool] | None:
    """The hook point as stored (a class attribute's descriptor, found along the MRO) and
    whether its first parameter is bound (an instance method or classmethod of a class)."""
    owner: Any = sys.modules.get(module)
    if owner is None:
        return None
    *path, attribute = name.split(".")
    for part in path:
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    try:
        raw = inspect.getattr_static(owner, attribute)
    except AttributeError:
        return None
    if not isinstance(owner, type):
        return raw, False
    if isinstance(raw, staticmethod):
        return raw.__func__, False
    if isinstance(raw, classmethod):
        return raw.__func__, True
    return raw, True


def _is_async(function: Any) -> bool:
    """A coroutine function as stored: what the caller gets back is what counts. A plain
    ``functools.wraps`` decorator around a coroutine function may hand back its coroutine or
    run it and return the value (a sync facade: asyncer.syncify, anyio.from_thread.run); an
    awaiting hook on the latter would hand the host a coroutine instead of its value, so only
    the outermost function is judged (an ``async def`` decorator is one)."""
    return inspect.iscoroutinefunction(function)


def _lacks(function: Any, method: bool, reads: tuple[str, ...]) -> str | None:
    parameters = list(inspect.signature(function).parameters.values())[int(method) :]
    for position, expected in enumerate(reads):
        if position >= len(parameters):
            return f"lacks the parameter {expected!r} (position {position + 1})"
        found = parameters[position]
        if found.name != expected or found.kind not in _POSITIONAL:
            shown = f"{found.name!r} ({found.kind.description})"
            return f"has {shown} where the hook reads the parameter {expected!r}"
    return None
