"""A real MCP server with one delivering tool, in-process or as a stdio program.

``python delivery_server.py`` serves it over stdio. ``deliver`` answers with a canary in its text
and structured content, so tests can check that no verifier failure leaks what it read.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

CANARY_RESULT = "canary-verifier-result-0d4e71"
CANARY_ARG = "canary-verifier-argument-b93a0c"
TOOL = "deliver"


def build_server() -> Server[Any]:
    tool = types.Tool(name=TOOL, description="Delivers.", input_schema={"type": "object"})

    async def on_list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def on_call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        text = types.TextContent(type="text", text=f"delivered {CANARY_RESULT}")
        return types.CallToolResult(content=[text], structured_content={"id": CANARY_RESULT})

    return Server(
        "delivery", version="1.0.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool
    )


async def _main() -> None:
    from mcp.server.stdio import stdio_server

    server = build_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(_main)
