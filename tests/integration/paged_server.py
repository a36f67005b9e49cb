"""A server whose catalog is a cursor chain of three pages, or one that loops.

``build(mode)`` returns the server for the ``mcp`` line installed (the 1.x or the 2.x low-level
``Server``), for in-process sessions; ``python paged_server.py stdio MODE`` serves one session
over stdio (run by the project's own interpreter, mcp 2.x, whatever SDK the client cell has).
Modes: ``paged`` -- pages 0 -> 1 -> 2, the last without ``nextCursor``; ``loop`` -- pages
0 -> 1 -> 2 -> 1 -> 2 -> ... (the chain never ends: a client that follows it gives up); any other
mode serves the ``paged`` catalog under a server name of its own (another server). The first
page lists ``echo`` (``text`` required), which answers ``ok``.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from typing import Any

MCP_MAJOR = int(version("mcp").split(".")[0])
CURSOR = "paged-cursor-"
PAGES = 3
ECHO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}
_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def page(mode: str, cursor: str | None) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
    """The tools (name, input schema) of the page at ``cursor`` and its ``nextCursor``."""
    index = 0 if cursor is None else int(cursor.rsplit("-", 1)[1])
    tools = [("echo", ECHO_SCHEMA)] if index == 0 else [(f"page_{index}", _OBJECT)]
    following: int | None = index + 1
    if mode == "loop" and index >= 2:
        following = 1
    elif mode != "loop" and index + 1 >= PAGES:
        following = None
    return tools, None if following is None else f"{CURSOR}{following}"


def build(mode: str = "paged") -> Any:
    """The server for the installed ``mcp`` line."""
    return _build_1x(mode) if MCP_MAJOR == 1 else _build_2x(mode)


def _build_2x(mode: str) -> Any:
    import mcp_types as types
    from mcp.server import Server, ServerRequestContext

    async def on_list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        tools, following = page(mode, params.cursor if params is not None else None)
        listed = [types.Tool(name=name, input_schema=schema) for name, schema in tools]
        return types.ListToolsResult(tools=listed, next_cursor=following)

    async def on_call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    return Server(
        f"paged-server-{mode}",
        version="1.0.0",
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def _build_1x(mode: str) -> Any:
    from mcp import types
    from mcp.server.lowlevel import Server

    server: Any = Server(f"paged-server-{mode}", version="1.0.0")

    async def list_tools(request: types.ListToolsRequest) -> types.ListToolsResult:
        params = request.params
        tools, following = page(mode, params.cursor if params is not None else None)
        listed = [types.Tool(name=name, inputSchema=schema) for name, schema in tools]
        return types.ListToolsResult(tools=listed, nextCursor=following)

    # The 1.x server hands the request only to a handler whose annotation resolves to the
    # request type (here a string, as this module's annotations are postponed).
    list_tools.__annotations__.update(
        request=types.ListToolsRequest, **{"return": types.ListToolsResult}
    )
    server.list_tools()(list_tools)

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        return [types.TextContent(type="text", text="ok")]

    return server


async def _serve_stdio(mode: str) -> None:
    from mcp.server.stdio import stdio_server

    server = build(mode)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    import anyio

    anyio.run(_serve_stdio, sys.argv[2] if len(sys.argv) > 2 else "paged")
