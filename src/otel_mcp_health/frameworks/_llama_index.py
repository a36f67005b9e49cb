"""llama-index-tools-mcp: the tools ``McpToolSpec.to_tool_list_async`` hands a llama-index agent.

``McpToolSpec(client)`` accepts any ``ClientSession``; the documented default client,
``BasicMCPClient`` (also what ``aget_tools_from_mcp_url`` builds), opens a new session for every
operation: ``list_tools`` and each ``call_tool`` run ``initialize`` in a transport and session
of their own, closed when the operation returns. No session lives between operations, so the
tools an agent holds belong to the server, not to a session (docs/model.md#scope).

``to_tool_list_async`` lists once (``fetch_tools``: one ``tools/list`` request, whose
``nextCursor`` it ignores, then ``allowed_tools``) and builds one ``FunctionTool`` per listed MCP
tool; it never lists again and ignores ``list_changed``. The
hook wraps both: the definitions ``fetch_tools`` returned inside ``to_tool_list_async`` are the
install, attributed to the session that listed them (the latest application ``tools/list``
inside the call, as the instrumentation marks it) and so to its server; with a caller's own
``ClientSession`` that is the caller's session.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Any

from otel_mcp_health.frameworks._hooks import Framework, in_module
from otel_mcp_health.frameworks._report import appending_to, collecting, report_install

_logger = logging.getLogger(__name__)

#: The MCP definitions ``fetch_tools`` returned inside the current ``to_tool_list_async``.
_FETCHED: ContextVar[list[Any] | None] = ContextVar("otel_mcp_health_llama_index", default=None)


_fetch_tools = appending_to(_FETCHED)


async def _to_tool_list_async(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    def report(tools: Any, fetched: list[Any], listing: Any) -> None:
        _report(instance, fetched, listing)

    return await collecting(_FETCHED, wrapped, args, kwargs, report)


def _report(spec: Any, fetched: list[Any], listing: Any) -> None:
    """Report the definitions the tool list was built from (never raises)."""
    try:
        if fetched:
            report_install(listing if listing is not None else spec.client, list(fetched[-1]))
    except Exception:  # the agent's tools must come back whatever happens to our record
        _logger.debug("otel-mcp-health: llama-index install not recorded", exc_info=True)


LLAMA_INDEX = Framework(
    distribution="llama-index-tools-mcp",
    supported=">=0.6",
    patches=in_module(
        "llama_index.tools.mcp.base",
        {
            "McpToolSpec.to_tool_list_async": _to_tool_list_async,
            "McpToolSpec.fetch_tools": _fetch_tools,
        },
    ),
)
