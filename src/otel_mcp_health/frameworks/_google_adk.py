"""google-adk: the tools ``McpToolset.get_tools`` hands an ADK agent's model.

``McpToolset`` (``google/adk/tools/mcp_tool/mcp_toolset.py``) draws its sessions from an
``MCPSessionManager``, which pools one ``ClientSession`` per header identity (one for stdio),
reuses it across model steps and invocations, and rebuilds it when it died. ADK resolves an
agent's tools at every step, but ``BaseToolset.get_tools_with_prefix`` caches them per
invocation, so ``get_tools`` lists once per invocation (and not at all while the opt-in
``tool_list_cache_ttl_seconds`` cache holds); ``list_changed`` is never handled, so a change
within an invocation is not seen before the next one. It sends one ``tools/list`` and ignores
``nextCursor``: of a paginated catalog the agent gets the first page.

``get_tools`` wraps each listed MCP tool in an ``McpTool`` (skipping reserved names, applying
``tool_filter``); ``McpTool.raw_mcp_tool`` keeps the full definition. The hook wraps
``get_tools``: the ``raw_mcp_tool`` of every ``McpTool`` it returned is the install, attributed
to the session that listed them (the latest application ``tools/list`` inside the call) or, on
a cache hit, to the pooled session (``McpTool._mcp_session_manager._sessions``, private) when the
pool holds exactly one.
"""

from __future__ import annotations

import logging
from typing import Any

from otel_mcp_health.frameworks._hooks import Framework, Patch
from otel_mcp_health.frameworks._report import after_listing, report_install, unexpected

_logger = logging.getLogger(__name__)


async def _get_tools(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    return await after_listing(
        wrapped, args, kwargs, lambda tools, listing: _report(instance, tools, listing)
    )


def _report(toolset: Any, tools: Any, listing: Any) -> None:
    """Report the MCP definitions behind the returned ``McpTool`` s (never raises)."""
    try:
        definitions = [
            tool.raw_mcp_tool for tool in tools if getattr(tool, "raw_mcp_tool", None) is not None
        ]
        source = listing if listing is not None else _pooled_session(toolset)
        if source is not None:
            report_install(source, definitions)
    except Exception:  # the agent's step must go on whatever happens to our record
        _logger.debug("otel-mcp-health: google-adk install not recorded", exc_info=True)
        unexpected("google-adk", "McpToolset.get_tools returned tools of an unknown shape")


def _pooled_session(toolset: Any) -> Any:
    sessions = getattr(getattr(toolset, "_mcp_session_manager", None), "_sessions", None)
    if isinstance(sessions, dict) and len(sessions) == 1:
        [entry] = sessions.values()
        return entry[0]
    return None


GOOGLE_ADK = Framework(
    distribution="google-adk",
    supported=">=2.13",
    patches=(Patch("google.adk.tools.mcp_tool.mcp_toolset", "McpToolset.get_tools", _get_tools),),
)
