"""The benchmarks' MCP server: the SDK's own low-level server with a small catalog and a cheap tool.

Served three ways: in-process (``build_server()``), over stdio (``python _server.py --stdio``) and
over streamable HTTP (``python _server.py --http``: uvicorn on ``127.0.0.1``, an ephemeral port;
it prints the endpoint's URL on one line, then serves until its standard input closes). The tool
does almost nothing on purpose: the benchmark measures what tracing adds around a call.

``build_server(pages=N)`` (over stdio: ``python _server.py --stdio --pages N``) lists a catalog of
``N`` tools one per ``tools/list`` page instead, chained by ``nextCursor`` (the cursor is the next
page's number): the discovery benchmark's long traversal (``bench_scale.py``).
"""

from __future__ import annotations

import socket
import sys
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

_QUERY = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "maximum": 50}},
    "required": ["query"],
}
TOOLS = tuple(
    types.Tool(
        name=name,
        description=f"{name.replace('_', ' ').capitalize()} in the knowledge base.",
        input_schema=_QUERY,
        annotations=types.ToolAnnotations(read_only_hint=True),
    )
    for name in ("lookup", "search_articles", "list_authors", "get_article", "count_articles")
)


async def _list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=list(TOOLS))


async def _call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    if params.name not in {tool.name for tool in TOOLS}:
        raise MCPError(code=types.METHOD_NOT_FOUND, message="unknown tool")
    return types.CallToolResult(content=[types.TextContent(type="text", text="3 articles found")])


def paged_tools(pages: int) -> tuple[types.Tool, ...]:
    """The ``pages`` tools of the paged catalog, one per page."""
    return tuple(
        types.Tool(
            name=f"tool_{index:05d}",
            description=f"Look up section {index} of the knowledge base.",
            input_schema=_QUERY,
            annotations=types.ToolAnnotations(read_only_hint=True),
        )
        for index in range(pages)
    )


def _paged(pages: int) -> Any:
    catalog = paged_tools(pages)

    async def list_page(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        cursor = params.cursor if params is not None else None
        index = int(cursor) if cursor is not None else 0
        following = str(index + 1) if index + 1 < pages else None
        return types.ListToolsResult(tools=[catalog[index]], next_cursor=following)

    return list_page


def build_server(pages: int = 0) -> Server[Any]:
    """The bench server; ``pages``: list a catalog of that many tools, one per page."""
    return Server(
        "bench-server",
        version="1.0.0",
        on_list_tools=_paged(pages) if pages else _list_tools,
        on_call_tool=_call_tool,
    )


async def _serve_stdio(pages: int = 0) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(pages)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def _serve_http() -> None:
    app = build_server().streamable_http_app(host="127.0.0.1")
    userver = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    async with anyio.create_task_group() as tg:
        tg.start_soon(userver.serve, [sock])
        while not userver.started:  # noqa: ASYNC110  # uvicorn exposes a flag, no event
            await anyio.sleep(0.01)
        sys.stdout.write(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp\n")
        sys.stdout.flush()
        await anyio.to_thread.run_sync(sys.stdin.read)  # until the parent closes our stdin
        userver.should_exit = True


if __name__ == "__main__":
    if sys.argv[1:2] == ["--stdio"]:
        anyio.run(_serve_stdio, int(sys.argv[3]) if sys.argv[2:3] == ["--pages"] else 0)
    else:
        anyio.run(_serve_http)
