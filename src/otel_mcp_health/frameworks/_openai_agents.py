"""openai-agents: the MCP tools an ``Agent`` hands its model at every turn.

Session pattern: each ``MCPServerStdio`` / ``MCPServerStreamableHttp`` / ``MCPServerSse``
(``agents/mcp/server.py``) opens one session in ``connect()`` (or ``async with server``) and keeps
it as ``server.session`` until ``cleanup()``: on mcp 2.x the ``ClientSession`` of an
``mcp.Client(mode="auto")`` it runs in a background task, on mcp 1.x a ``ClientSession`` after
``initialize()``. Every run of ``Agent(mcp_servers=[...])`` reuses it; the run never connects.

Where it installs: at every turn the run loop asks the agent for its tools
(``Agent.get_all_tools`` -> ``MCPUtil.get_all_function_tools``), which lists each server
(``server.list_tools``: a fresh ``tools/list`` by default, the cached list with
``cache_tools_list=True`` until ``invalidate_tools_cache()``; ``tool_filter`` applies inside it)
and converts the result with ``MCPUtil._convert_mcp_tools_to_function_tools(tools, server, ...)``
(``agents/mcp/util.py``) into ``FunctionTool`` s, renamed with ``include_server_in_tool_names``
or ``tool_name_override``. Those are what the model is offered at that turn. ``list_changed`` is
not handled (a user ``message_handler`` only sees it).

How the hook maps back: it lets the conversion finish, then reports the ``mcp.types.Tool`` list
it was handed (the MCP definitions, before renaming and strict-schema conversion; after
``tool_filter``, so a filtered agent reports the subset it offers) with the ``server``
argument's ``session``: one install per server per turn. A conversion that raises reports
nothing, nor does an unconnected server (``session`` None). ``HostedMCPTool`` runs MCP on
OpenAI's side: no local session, nothing to report.
"""

from __future__ import annotations

import logging
from typing import Any

from otel_mcp_health.frameworks._hooks import Framework, Patch
from otel_mcp_health.frameworks._report import after_call, report_install, unexpected

_logger = logging.getLogger(__name__)


def _report(_util: Any, args: tuple[Any, ...], kwargs: dict[str, Any], _converted: Any) -> None:
    """One install: the MCP tools converted for this turn, with the server's session."""
    try:
        tools = args[0] if args else kwargs["tools"]
        server = args[1] if len(args) > 1 else kwargs["server"]
        report_install(getattr(server, "session", None), list(tools))
    except Exception:  # not the signature this hook knows: nothing to report
        _logger.debug("otel-mcp-health: openai-agents install not recorded", exc_info=True)
        unexpected("openai-agents", "MCPUtil._convert_mcp_tools_to_function_tools changed shape")


_convert = after_call(_report)

OPENAI_AGENTS = Framework(
    distribution="openai-agents",
    supported=">=0.24",
    patches=(
        Patch(
            "agents.mcp.util",
            "MCPUtil._convert_mcp_tools_to_function_tools",
            _convert,
            ("tools", "server"),
        ),
    ),
)
