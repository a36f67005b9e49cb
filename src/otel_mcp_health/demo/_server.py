"""The demo's MCP server: a small, real server whose tools misbehave on purpose.

It is a low-level :class:`mcp.server.lowlevel.Server` (the SDK's own server, no test doubles)
with a two-page catalog and ``tools.listChanged`` advertised. Every tool stands for one way an
agent's tool use goes wrong while the transport stays perfectly green:

==========================  =======================================================================
tool                        behaviour
==========================  =======================================================================
``export_report``           writes ``content`` to ``path``, then says so (the honest tool)
``export_report_broken``    says it wrote the file, writes nothing (a *false success*)
``create_ticket``           answers ``isError: true`` (the tool itself failed)
``search``                  read-only lookup (``readOnlyHint``); rejects a non-string ``query``
                            with JSON-RPC ``-32602`` echoing the arguments, as real servers do
``publish_slow``            writes ``content`` to ``path``, then sleeps far past any sane client
                            timeout: the effect happened, the answer never arrives
``notify_team``             posts to a team channel nobody can check (no outcome receipt exists)
``announce_change``         sends ``notifications/tools/list_changed`` (the catalog "changed")
==========================  =======================================================================

An unknown tool name is answered with ``-32601``. Error messages echo the arguments on purpose:
the demo shows that none of it reaches the exported telemetry.

Served three ways by the demo: over streamable HTTP on ``127.0.0.1`` (:func:`serve_http`, which
also mounts ``/authn``, a route that always answers ``401`` with an ``invalid_token`` challenge),
in-process (``mcp.Client(build_server())``), and over stdio::

    python -m otel_mcp_health.demo._server --stdio
"""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import anyio
import mcp_types as types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

#: How long ``publish_slow`` keeps the client waiting after writing. The demo's client gives up
#: after a fraction of a second; closing the session cancels the handler long before this.
SLOW_SECONDS: Final = 30.0
#: How long uvicorn may take to finish open requests when the demo stops it.
_GRACEFUL_SHUTDOWN_S: Final = 2

_WRITES = types.ToolAnnotations(read_only_hint=False, destructive_hint=False)


def _tool(
    name: str,
    description: str,
    *arguments: str,
    annotations: types.ToolAnnotations = _WRITES,
) -> types.Tool:
    """A tool whose arguments are all required strings."""
    schema = {
        "type": "object",
        "properties": {argument: {"type": "string"} for argument in arguments},
        "required": list(arguments),
    }
    return types.Tool(
        name=name, description=description, input_schema=schema, annotations=annotations
    )


#: The catalog's two pages (the client must follow ``nextCursor`` to see the second one).
PAGE1: Final = (
    _tool("export_report", "Write a report file.", "path", "content"),
    _tool("export_report_broken", "Write a report file (claims to).", "path", "content"),
    _tool("create_ticket", "Open a ticket.", "title"),
)
PAGE2: Final = (
    _tool(
        "search",
        "Search the knowledge base.",
        "query",
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    _tool("publish_slow", "Publish a report (slowly).", "path", "content"),
    _tool("notify_team", "Post a message to the team channel.", "message"),
    types.Tool(
        name="announce_change",
        description="Announce a catalog change.",
        input_schema={"type": "object"},
    ),
)
#: The opaque cursor of page 2 (the instrumentation records only a keyed hash of it).
PAGE2_CURSOR: Final = "page-2"


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


def _write(arguments: dict[str, Any]) -> None:
    Path(str(arguments["path"])).write_text(str(arguments["content"]), encoding="utf-8")


async def _list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    cursor = params.cursor if params is not None else None
    if cursor is None:
        return types.ListToolsResult(tools=list(PAGE1), next_cursor=PAGE2_CURSOR)
    if cursor == PAGE2_CURSOR:
        return types.ListToolsResult(tools=list(PAGE2))
    raise MCPError(code=types.INVALID_PARAMS, message=f"invalid cursor {cursor!r}")


async def _call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    name, arguments = params.name, dict(params.arguments or {})
    if name == "export_report":
        await anyio.to_thread.run_sync(_write, arguments)
        return types.CallToolResult(content=_text(f"exported {arguments['path']}"))
    if name == "export_report_broken":
        return types.CallToolResult(content=_text(f"exported {arguments.get('path')}"))
    if name == "create_ticket":
        message = f"ticket queue is read-only, rejected {arguments!r}"
        return types.CallToolResult(content=_text(message), is_error=True)
    if name == "search":
        if not isinstance(arguments.get("query"), str):
            raise MCPError(code=types.INVALID_PARAMS, message=f"query must be text: {arguments!r}")
        return types.CallToolResult(content=_text("3 articles found"))
    if name == "publish_slow":
        await anyio.to_thread.run_sync(_write, arguments)
        await anyio.sleep(SLOW_SECONDS)
        return types.CallToolResult(content=_text("published"))
    if name == "notify_team":
        return types.CallToolResult(content=_text("posted"))
    if name == "announce_change":
        await ctx.session.send_tool_list_changed()
        return types.CallToolResult(content=_text("catalog changed"))
    raise MCPError(code=types.METHOD_NOT_FOUND, message=f"unknown tool {name!r} {arguments!r}")


class _DemoServer(Server[Any]):
    """The low-level server, advertising ``tools.listChanged`` in every protocol era."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


def build_server() -> Server[Any]:
    """A fresh demo server (one per session keeps the demo's sessions independent)."""
    return _DemoServer(
        "otel-mcp-health-demo",
        version="1.0.0",
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
    )


async def _authn(request: Request) -> PlainTextResponse:
    challenge = 'Bearer error="invalid_token", error_description="the access token expired"'
    return PlainTextResponse(
        "unauthorized", status_code=401, headers={"WWW-Authenticate": challenge}
    )


@asynccontextmanager
async def serve_http(server: Server[Any]) -> AsyncIterator[str]:
    """Serve ``server`` on ``127.0.0.1`` (ephemeral port) in this process; yields the base URL.

    The MCP endpoint is ``<base>/mcp``; ``<base>/authn`` answers every request with ``401``.
    The listening socket is bound before uvicorn starts, so the URL is valid as soon as it is
    yielded (no port race), and uvicorn is stopped when the block exits.
    """
    app = server.streamable_http_app(
        host="127.0.0.1",
        custom_starlette_routes=[Route("/authn", _authn, methods=["GET", "POST", "DELETE"])],
    )
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN_S,
    )
    userver = uvicorn.Server(config)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(userver.serve, [sock])
            with anyio.fail_after(10):
                while not userver.started:  # noqa: ASYNC110  # uvicorn exposes a flag, no event
                    await anyio.sleep(0.01)
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                userver.should_exit = True
    finally:
        sock.close()


async def _serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = build_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main(argv: list[str]) -> int:
    """``python -m otel_mcp_health.demo._server --stdio``: serve the demo over stdio."""
    if argv != ["--stdio"]:
        sys.stderr.write("usage: python -m otel_mcp_health.demo._server --stdio\n")
        return 2
    anyio.run(_serve_stdio)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
