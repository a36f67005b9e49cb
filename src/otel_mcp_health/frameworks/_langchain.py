"""langchain-mcp-adapters: the tools ``load_mcp_tools`` hands a LangChain agent.

``load_mcp_tools(session)`` lists in the application's session; in the documented default
(``MultiServerMCPClient(...).get_tools()``, which calls ``load_mcp_tools(None, connection=...)``)
it lists in a session of its own making, and every tool call later opens a fresh session. Either
way the tools it returns are converted one by one by ``convert_mcp_tool_to_langchain_tool`` from
the MCP definitions it listed: those definitions are the install, attributed to the session that
listed them (the application's, or the latest application ``tools/list`` inside the call) and so
to its server (docs/model.md#scope).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from otel_mcp_health.frameworks._hooks import Framework, Patch
from otel_mcp_health.frameworks._report import collecting, report_install

#: The MCP definitions converted inside the current ``load_mcp_tools``.
_CONVERTED: ContextVar[list[Any] | None] = ContextVar("otel_mcp_health_langchain", default=None)


async def _load_mcp_tools(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    session = args[0] if args else kwargs.get("session")

    def report(tools: Any, converted: list[Any], listing: Any) -> None:
        report_install(session if session is not None else listing, converted)

    return await collecting(_CONVERTED, wrapped, args, kwargs, report)


def _convert(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    result = wrapped(*args, **kwargs)
    converted = _CONVERTED.get()
    tool = args[1] if len(args) > 1 else kwargs.get("tool")
    if converted is not None and tool is not None:
        converted.append(tool)
    return result


_TOOLS = "langchain_mcp_adapters.tools"
LANGCHAIN = Framework(
    distribution="langchain-mcp-adapters",
    supported=">=0.3",
    patches=(
        Patch(_TOOLS, "load_mcp_tools", _load_mcp_tools, ("session",)),
        Patch(_TOOLS, "convert_mcp_tool_to_langchain_tool", _convert, ("session", "tool")),
        # ``MultiServerMCPClient`` calls the name it imported
        Patch("langchain_mcp_adapters.client", "load_mcp_tools", _load_mcp_tools, ("session",)),
    ),
)
