"""The peer benchmark's MCP server for ``mcp`` 1.x: the same catalog and tool as ``_server.py``.

``_server.py`` is written against ``mcp`` 2.x; this is the SDK 1.x's low-level server with the
same five tools and the same cheap ``lookup`` (input validation off, as 2.x's low-level server
does not validate either). Served in-process (``build_server()``) or over streamable HTTP
(``python server_v1.py``: uvicorn on ``127.0.0.1``, an ephemeral port; it prints the endpoint's
URL on one line, then serves until its standard input closes).
"""

from __future__ import annotations

import logging
import socket
import sys
from typing import Any

import anyio
import uvicorn
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

_QUERY = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "maximum": 50}},
    "required": ["query"],
}
TOOLS = tuple(
    types.Tool(
        name=name,
        description=f"{name.replace('_', ' ').capitalize()} in the knowledge base.",
        inputSchema=_QUERY,
        annotations=types.ToolAnnotations(readOnlyHint=True),
    )
    for name in ("lookup", "search_articles", "list_authors", "get_article", "count_articles")
)
_NAMES = frozenset(tool.name for tool in TOOLS)


def build_server() -> Server[Any]:
    server: Server[Any] = Server("bench-server", version="1.0.0")

    @server.list_tools()  # type: ignore[misc,no-untyped-call]
    async def _list_tools() -> list[types.Tool]:
        return list(TOOLS)

    @server.call_tool(validate_input=False)  # type: ignore[misc]
    async def _call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        if name not in _NAMES:
            raise ValueError("unknown tool")
        return [types.TextContent(type="text", text="3 articles found")]

    return server


async def _serve_http() -> None:
    # 1.30 logs a ClosedResourceError traceback for every client session that ends.
    logging.getLogger("mcp.server.streamable_http").setLevel(logging.CRITICAL)
    manager = StreamableHTTPSessionManager(app=build_server())
    config = uvicorn.Config(
        manager.handle_request, log_level="warning", lifespan="off", interface="asgi3"
    )
    userver = uvicorn.Server(config)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    async with manager.run(), anyio.create_task_group() as tg:
        tg.start_soon(userver.serve, [sock])
        while not userver.started:  # noqa: ASYNC110  # uvicorn exposes a flag, no event
            await anyio.sleep(0.01)
        sys.stdout.write(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp\n")
        sys.stdout.flush()
        await anyio.to_thread.run_sync(sys.stdin.read)  # until the parent closes our stdin
        userver.should_exit = True


if __name__ == "__main__":
    anyio.run(_serve_http)
