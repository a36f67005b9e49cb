"""Reading the offered tools out of a request, whatever shape it has (private).

A request's ``tools`` are built by the application from definitions an MCP server sent: input we
do not trust. Reading them is bounded and never raises: only a list or tuple is read (an unknown
iterable could be a one-shot generator the library then serializes empty); a request offering more
than :data:`MAX_TOOLS` definitions is not read at all (said once: a partial read would look like
a filter and hide the definitions past the bound); an entry that is not an object, or whose name
is not a string of at most :data:`MAX_NAME` characters, is skipped (no MCP tool can come of it).
Descriptions and schemas are handed on by reference, never copied, walked or serialized here: the
recorder reduces them to digests in memory. Nothing read here is exported.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from typing import Any

from otel_mcp_health.core.offered import OfferedTool

_logger = logging.getLogger(__name__)

#: The most tool definitions one request is read for. APIs cap far lower (OpenAI: 128 functions
#: per Chat Completions request); past this bound a request is not read.
MAX_TOOLS = 512
#: The longest name read (APIs cap names at 64 or 128 characters; a framework's prefix adds a few).
MAX_NAME = 1024

#: The API whose hook is reading the request running in this context: a library that goes
#: through another hooked library (LiteLLM through the OpenAI SDK) is read once, by the outer
#: hook; the inner hooks see it set and read nothing.
READING: ContextVar[str | None] = ContextVar("otel_mcp_health_model_request", default=None)

#: APIs already warned about a request past :data:`MAX_TOOLS` (one warning each a process).
_WARNED: set[str] = set()

#: Reads one tool entry into an :class:`OfferedTool`, or ``None`` when it offers no function tool.
Entry = Callable[[Any], OfferedTool | None]


def field(value: Any, key: str) -> Any:
    """``value[key]`` for a mapping, the attribute for an object (a pydantic model the library
    has not dumped yet), ``None`` when absent or unreadable. Never raises."""
    if type(value) is dict:  # the common case, first: a plain dict's get cannot raise
        return value.get(key)
    try:
        if isinstance(value, Mapping):
            return value.get(key)
        if isinstance(value, (str, bytes, int, float, list, tuple)) or value is None:
            return None
        return getattr(value, key, None)
    except Exception:  # noqa: BLE001 - a hostile mapping or property: nothing to read
        return None


def tool(name: Any, description: Any, parameters: Any) -> OfferedTool | None:
    """One offered definition, or ``None`` when ``name`` cannot be a tool's name. A description
    that is not a string is read as absent; the schema is kept as it is, by reference."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        return None
    return OfferedTool(name, description if isinstance(description, str) else None, parameters)


def entries(api: str, value: Any) -> list[Any] | tuple[Any, ...] | None:
    """``value`` as a sequence of tool entries, or ``None`` when it is not read: not a list or
    tuple, or longer than :data:`MAX_TOOLS` (one warning per API)."""
    if not isinstance(value, (list, tuple)):
        return None
    if len(value) > MAX_TOOLS:
        too_many(api, len(value))
        return None
    return value


def too_many(api: str, count: int) -> None:
    """Say once per API that a request offering ``count`` tools was not read."""
    if api in _WARNED:
        return
    _WARNED.add(api)
    _logger.warning(
        "otel-mcp-health: a %s request offered %d tools, more than the %d read per request; "
        "what such requests offer is not read (the catalog is judged on the other evidence).",
        api,
        count,
        MAX_TOOLS,
    )


def read(api: str, value: Any, entry: Entry) -> tuple[OfferedTool, ...] | None:
    """The function tools ``value`` (a request's ``tools``) offers, read by ``entry``, or
    ``None`` when the request is not read (see :func:`entries`)."""
    found = entries(api, value)
    if found is None:
        return None
    return tuple(t for t in map(entry, found) if t is not None)


def flattened(api: str, groups: Iterable[Any], members: Callable[[Any], Any]) -> list[Any] | None:
    """The entries of every group (a Gemini tool's ``functionDeclarations``) in one list, or
    ``None`` when there are more than :data:`MAX_TOOLS` in all (one warning per API)."""
    found: list[Any] = []
    for group in groups:
        inner = members(group)
        if not isinstance(inner, (list, tuple)):
            continue
        if len(found) + len(inner) > MAX_TOOLS:
            too_many(api, len(found) + len(inner))
            return None
        found.extend(inner)
    return found


def record(api: str, tools: tuple[OfferedTool, ...] | None) -> None:
    """Hand what a request offered to the instrumentation's recorder (looked up on the module
    each time, so a test can put its own there). ``None`` (not read: no ``tools`` at all, or a
    shape not read) records nothing; a ``tools`` list with no function tool in it is recorded
    empty (the model was offered none). Never raises."""
    if tools is None:
        return
    try:
        from otel_mcp_health import instrumentation

        instrumentation.record_model_request(api, tools)
    except Exception:  # the application's request goes on whatever happens here
        _logger.debug("otel-mcp-health: a model request was not recorded", exc_info=True)


def guarded(api: str, read_request: Callable[[], tuple[OfferedTool, ...] | None]) -> None:
    """Read and record one request of ``api``, unless an outer hook is reading it. Never raises."""
    if READING.get() is not None:
        return
    try:
        tools = read_request()
    except Exception:  # an unreadable request is not read, and goes on
        _logger.debug("otel-mcp-health: a %s request was not read", api, exc_info=True)
        return
    record(api, tools)


def unreadable(api: str) -> None:
    """A hook could not read a request's arguments: logged at debug level, the call goes on."""
    _logger.debug("otel-mcp-health: a %s request was not read", api)
