"""pydantic-ai: the tools ``MCPToolset.get_tools`` hands an agent's model.

``MCPToolset`` (``pydantic_ai/mcp.py``) wraps one ``fastmcp.Client``, which owns one
``mcp.ClientSession`` while the toolset is entered: an agent run enters its toolsets, so there is
one session per run (``async with agent:`` holds it across runs). At every step of a run the
agent asks each toolset for its tools (``ToolManager.for_run_step`` -> ``get_tools``): that is
the install. ``get_tools`` takes the MCP definitions from ``list_tools``, which caches them by
default (``cache_tools=True``); the toolset's own message handler drops the cache on
``notifications/tools/list_changed``, so the next step lists again and installs the new tools. A
pre-built ``fastmcp.Client`` handed to ``MCPToolset`` gets no such handler: its cache lives until
the session closes, and the agent keeps the old tools. The toolset's default client negotiates
the protocol era (``server/discover`` first): in the 2026-07-28 era a notification comes only on a
``subscriptions/listen`` stream, which the toolset never opens, so there the cache is never
dropped within a session either (measured with 2.68.0 against an mcp 2.x server).

The hook wraps ``get_tools`` and ``list_tools``: the definitions ``list_tools`` returned inside
``get_tools``, minus those ``get_tools`` hid from the model, are the install. They are attributed
to the session that listed them (the latest application ``tools/list`` inside the call) or, on a
cache hit, to the toolset's live session (``toolset.client.session``). A cached list reported
once for a session is not reported again at every step.
"""

from __future__ import annotations

import logging
import weakref
from contextvars import ContextVar
from typing import Any

from otel_mcp_health.frameworks._hooks import Framework, in_module
from otel_mcp_health.frameworks._report import appending_to, collecting, report_install

_logger = logging.getLogger(__name__)

#: The MCP definitions ``list_tools`` returned inside the current ``get_tools``.
_LISTED: ContextVar[list[Any] | None] = ContextVar("otel_mcp_health_pydantic_ai", default=None)
#: Per toolset: the (session, cached list) last reported, so a cache hit reports nothing new.
_REPORTED: weakref.WeakKeyDictionary[Any, tuple[Any, Any]] = weakref.WeakKeyDictionary()


_list_tools = appending_to(_LISTED)


async def _get_tools(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    def report(tools: Any, listed: list[Any], listing: Any) -> None:
        _report(instance, listed, listing, tools)

    return await collecting(_LISTED, wrapped, args, kwargs, report)


def _report(toolset: Any, listed: list[Any], listing: Any, installed: Any) -> None:
    """Report the definitions behind ``installed`` (never raises)."""
    try:
        if not listed:
            return
        definitions = listed[-1]
        source = listing if listing is not None else _live_session(toolset)
        last = _REPORTED.get(toolset)
        if source is None or (last is not None and last[0] is source and last[1] is definitions):
            return
        _REPORTED[toolset] = (source, definitions)
        names = set(installed)
        report_install(source, [tool for tool in definitions if tool.name in names])
    except Exception:  # the agent's step must go on whatever happens to our record
        _logger.debug("otel-mcp-health: pydantic-ai install not recorded", exc_info=True)


def _live_session(toolset: Any) -> Any:
    try:
        return toolset.client.session  # a fastmcp.Client raises when not connected
    except Exception:  # noqa: BLE001 - a fastmcp.Client raises when not connected
        return None


PYDANTIC_AI = Framework(
    distribution="pydantic-ai-slim",
    supported=">=2.68, <3",
    patches=in_module(
        "pydantic_ai.mcp",
        {"MCPToolset.get_tools": _get_tools, "MCPToolset.list_tools": _list_tools},
    ),
)
