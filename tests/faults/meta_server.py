"""A stdio MCP server that records the ``params._meta`` it receives (``python meta_server.py``).

``echo_meta`` returns its request's ``_meta``; ``ask`` first sends an elicitation request to the
host, so the host's callback shows what ``_meta`` travels back to it.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

_OBJECT: dict[str, Any] = {"type": "object"}


def _meta(params: types.CallToolRequestParams) -> dict[str, Any]:
    return dict(params.meta or {})


async def on_list_tools(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name="echo_meta", description="Echoes _meta.", input_schema=_OBJECT),
            types.Tool(name="ask", description="Elicits, then echoes.", input_schema=_OBJECT),
        ]
    )


async def on_call_tool(
    ctx: ServerRequestContext, params: types.CallToolRequestParams
) -> types.CallToolResult:
    if params.name == "ask":
        schema: Any = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        await ctx.session.elicit("Proceed?", schema, related_request_id=ctx.request_id)
    done = types.TextContent(type="text", text="ok")
    return types.CallToolResult(content=[done], structured_content={"meta": _meta(params)})


async def main() -> None:
    server = Server("meta", version="1.0.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
