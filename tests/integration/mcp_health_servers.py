"""Real MCP servers for the integration suite (mcp 2.3 low-level ``Server``), plus the canaries.

One catalog, served in two pages, covers every scenario of issue 3: a tool with required
arguments, ``isError``, a JSON-RPC -32602 that echoes the arguments (as real servers do), a
``list_changed`` trigger, a slow tool, a progress tool, typed tools with an ``outputSchema`` (one
valid, one returning a value that violates it), a ``readOnlyHint`` tool and a ``crash`` tool (stdio
only: the server process exits mid-call). Every text a server could leak carries a canary that the
privacy test searches for in the exported telemetry.
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

CANARY_TOKEN = "canary-bearer-3c1d9e"
CANARY_ARG = "canary-argument-7f3a52"
CANARY_RESULT = "canary-result-91bd07"
CANARY_ENV = "canary-environment-66c0af"
CANARY_CURSOR = "canary-cursor-5e2c88"
CANARY_DESCRIPTION = "canary-description-a8f1b4"
CANARIES = (CANARY_TOKEN, CANARY_ARG, CANARY_RESULT, CANARY_ENV, CANARY_CURSOR, CANARY_DESCRIPTION)

_OBJECT: dict[str, Any] = {"type": "object"}
_COUNT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"count": {"type": "integer"}},
    "required": ["count"],
}
PAGE1 = [
    types.Tool(
        name="create_ticket",
        description="Create a ticket.",
        input_schema={
            "type": "object",
            "properties": {"title": {"type": "string"}, "priority": {"type": "string"}},
            "required": ["title", "priority"],
        },
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False),
    ),
    types.Tool(name="fail", description="Returns isError.", input_schema=_OBJECT),
    types.Tool(name="bad_args", description="Rejects its arguments.", input_schema=_OBJECT),
    types.Tool(
        name="trigger_change", description="Announces a catalog change.", input_schema=_OBJECT
    ),
    types.Tool(name="crash", description="Exits the server process.", input_schema=_OBJECT),
    types.Tool(name="ask", description="Asks the user.", input_schema=_OBJECT),
]
PAGE2 = [
    types.Tool(name="slow", description="Sleeps.", input_schema=_OBJECT),
    types.Tool(name="progress", description="Reports progress.", input_schema=_OBJECT),
    types.Tool(
        name="progress_stray", description="Progress with another token.", input_schema=_OBJECT
    ),
    types.Tool(
        name="typed", description="Typed.", input_schema=_OBJECT, output_schema=_COUNT_SCHEMA
    ),
    types.Tool(
        name="typed_bad",
        description="Breaks its schema.",
        input_schema=_OBJECT,
        output_schema=_COUNT_SCHEMA,
    ),
    types.Tool(
        name="lookup",
        description="Reads.",
        input_schema=_OBJECT,
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
]
ALL_TOOLS = [*PAGE1, *PAGE2]


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


async def on_list_tools(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    cursor = params.cursor if params is not None else None
    if cursor is None:
        return types.ListToolsResult(tools=PAGE1, next_cursor=CANARY_CURSOR)
    if cursor == CANARY_CURSOR:
        return types.ListToolsResult(tools=PAGE2)
    raise MCPError(code=types.INVALID_PARAMS, message=f"Invalid cursor {cursor!r}")


async def announce_tools_changed(ctx: ServerRequestContext) -> None:
    """``notifications/tools/list_changed``, tied to the call that changed the catalog.

    Before the 2026-07-28 era, a request-scoped notification rides that call's own response
    stream over streamable HTTP, ahead of its result, so every client sees the signal before the
    call ends. Unscoped, it would ride the standalone GET stream: not ordered with the result,
    and lost when the client has not attached that stream yet (the SDK opens it in the
    background after the handshake). At the 2026-07-28 era changes are announced on
    ``subscriptions/listen`` only, so the notification stays unscoped: a client that opened no
    listen stream gets no signal, as from any server of that era.
    """
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        await ctx.session.send_tool_list_changed()
        return
    notification = types.ToolListChangedNotification()
    await ctx.session.send_notification(notification, related_request_id=ctx.request_id)


async def on_call_tool(
    ctx: ServerRequestContext, params: types.CallToolRequestParams
) -> types.CallToolResult:
    name, arguments = params.name, params.arguments or {}
    if name == "create_ticket":
        return types.CallToolResult(content=_text(f"created {CANARY_RESULT} for {arguments!r}"))
    if name == "fail":
        return types.CallToolResult(content=_text(f"boom {CANARY_RESULT}"), is_error=True)
    if name == "bad_args":
        raise MCPError(code=types.INVALID_PARAMS, message=f"unknown ticketId {arguments!r}")
    if name == "trigger_change":
        await announce_tools_changed(ctx)
        return types.CallToolResult(content=_text("changed"))
    if name == "ask":
        schema: Any = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        answer = await ctx.session.elicit("Proceed?", schema, related_request_id=ctx.request_id)
        return types.CallToolResult(content=_text(f"answer {answer.action}"))
    if name == "crash":
        os._exit(3)
    if name == "slow":
        await anyio.sleep(float(arguments.get("seconds", 5)))
        return types.CallToolResult(content=_text("slow done"))
    if name == "progress":
        for step in (1, 2, 3):
            await ctx.session.report_progress(step, 3, f"step {step} {CANARY_RESULT}")
        return types.CallToolResult(content=_text("progress done"))
    if name == "progress_stray":
        related = str(ctx.request_id) if ctx.request_id is not None else None
        await ctx.session.send_progress_notification(
            "not-this-request", 1, 2, CANARY_RESULT, related
        )
        await ctx.session.report_progress(1, 2)
        return types.CallToolResult(content=_text("stray done"))
    if name == "typed":
        return types.CallToolResult(content=_text("{}"), structured_content={"count": 3})
    if name == "typed_bad":
        return types.CallToolResult(
            content=_text("{}"), structured_content={"count": CANARY_RESULT}
        )
    if name == "lookup":  # read-only; slow when asked to (a read-only call that times out)
        await anyio.sleep(float(arguments.get("seconds", 0)))
        return types.CallToolResult(content=_text(f"found {CANARY_RESULT}"))
    raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")


def build_server() -> Server[Any]:
    """A fresh server advertising ``tools.listChanged`` in every era."""
    server: Server[Any] = Server(
        "health-test-server",
        version="1.2.3",
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    original = server.create_initialization_options

    def with_list_changed(
        notification_options: NotificationOptions | None = None, *a: Any, **kw: Any
    ) -> Any:
        return original(notification_options or NotificationOptions(tools_changed=True), *a, **kw)

    server.create_initialization_options = with_list_changed  # type: ignore[method-assign]
    return server


# ---- streamable HTTP (uvicorn on 127.0.0.1, ephemeral port) ------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _down(request: Request) -> PlainTextResponse:
    return PlainTextResponse("service unavailable", status_code=503)


async def _authn(request: Request) -> PlainTextResponse:
    challenge = f'Bearer error="invalid_token", error_description="{CANARY_DESCRIPTION}"'
    return PlainTextResponse(
        "unauthorized", status_code=401, headers={"WWW-Authenticate": challenge}
    )


async def _authz(request: Request) -> PlainTextResponse:
    challenge = (
        f'Bearer error="insufficient_scope", scope="tickets:write admin", '
        f'error_description="{CANARY_DESCRIPTION}"'
    )
    return PlainTextResponse("forbidden", status_code=403, headers={"WWW-Authenticate": challenge})


@asynccontextmanager
async def serve_http(server: Server[Any], port: int | None = None) -> AsyncIterator[str]:
    """Serve ``server`` at ``http://127.0.0.1:<port>/mcp`` (a free port unless given), plus the
    failure routes."""
    port = port or _free_port()
    app = server.streamable_http_app(
        host="127.0.0.1",
        custom_starlette_routes=[
            Route("/down", _down, methods=["GET", "POST", "DELETE"]),
            Route("/authn", _authn, methods=["GET", "POST", "DELETE"]),
            Route("/authz", _authz, methods=["GET", "POST", "DELETE"]),
        ],
    )
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    userver = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(userver.serve)
        with anyio.fail_after(10):
            while not userver.started:  # noqa: ASYNC110  # uvicorn exposes a flag, no event
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            userver.should_exit = True
