"""MCP servers that fail one layer each, for ``otel-mcp-health check`` (real SDK servers).

Run as a subprocess, the way ``check`` meets a server someone else wrote::

    python check_servers.py stdio healthy|loop|announce|listen   # a stdio server
    python check_servers.py http                          # prints its base URL, then serves

Over HTTP (uvicorn on 127.0.0.1, ephemeral port) the paths are: ``/mcp`` the healthy server,
``/secure`` the same server behind a bearer token (:data:`TOKEN`), ``/authn`` a 401 with an
``invalid_token`` challenge, ``/authn-scope`` a 401 whose challenge names a scope, ``/authz`` a
403 ``insufficient_scope``, ``/down`` a 503. Every echo of arguments carries the canary.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
import mcp_types as types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

TOKEN: Final = "canary-check-token-5b7e21"
CANARY_ARG: Final = "canary-check-argument-0c9d44"
CANARY_CURSOR: Final = "canary-check-cursor-77aa10"

_FILE: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}
TOOLS: Final = (
    types.Tool(
        name="lookup",
        input_schema={"type": "object"},
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(name="write_file", input_schema=_FILE),
    types.Tool(name="write_nothing", input_schema=_FILE),
    types.Tool(name="fail", input_schema={"type": "object"}),
    types.Tool(name="reject", input_schema={"type": "object"}),
    types.Tool(name="announce", input_schema={"type": "object"}),
    types.Tool(name="slow", input_schema={"type": "object"}),
)


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


async def _list_two_pages(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    if params is None or params.cursor is None:
        return types.ListToolsResult(tools=list(TOOLS[:3]), next_cursor=CANARY_CURSOR)
    if params.cursor == CANARY_CURSOR:
        return types.ListToolsResult(tools=list(TOOLS[3:]))
    raise MCPError(code=types.INVALID_PARAMS, message=f"bad cursor {params.cursor}")


async def _list_loop(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    # Page 2 points back at itself: a client that trusts nextCursor never finishes.
    return types.ListToolsResult(tools=list(TOOLS[:1]), next_cursor=CANARY_CURSOR)


async def _call(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    name, arguments = params.name, dict(params.arguments or {})
    if name == "lookup":
        return types.CallToolResult(content=_text(f"found {arguments!r}"))
    if name == "write_file":
        await anyio.Path(str(arguments["path"])).write_text(str(arguments["content"]))
        return types.CallToolResult(content=_text("written"))
    if name == "write_nothing":
        return types.CallToolResult(content=_text("written"))  # a false success
    if name == "fail":
        return types.CallToolResult(content=_text(f"failed on {arguments!r}"), is_error=True)
    if name == "reject":
        raise MCPError(code=types.INVALID_PARAMS, message=f"rejected {arguments!r}")
    if name == "announce":
        await ctx.session.send_tool_list_changed()
        return types.CallToolResult(content=_text("changed"))
    if name == "slow":  # may have acted, then keeps the client waiting far past its timeout
        await anyio.sleep(60)
        return types.CallToolResult(content=_text("done"))
    raise MCPError(code=types.METHOD_NOT_FOUND, message=f"unknown tool {name}")


class _Server(Server[Any]):
    """Advertises ``tools.listChanged`` in every era."""

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


def build(variant: str) -> Server[Any]:
    """``healthy``: two pages; ``loop``: a cursor loop; ``announce``: list_changed mid-listing;
    ``listen``: serves ``subscriptions/listen`` and announces one change on it (2026-07-28)."""
    listing = _list_loop if variant == "loop" else _list_two_pages
    if variant == "announce":
        announced: list[bool] = []

        async def listing_with_signal(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            if not announced and (params is None or params.cursor is None):
                announced.append(True)  # changed once, while being listed for the first time
                await ctx.session.send_tool_list_changed()
            return await _list_two_pages(ctx, params)

        listing = listing_with_signal
    if variant == "listen":
        return _Server(
            "check-listen",
            version="0.0.1",
            on_list_tools=listing,
            on_call_tool=_call,
            on_subscriptions_listen=_changes_once_listened(),
        )
    return _Server(f"check-{variant}", version="0.0.1", on_list_tools=listing, on_call_tool=_call)


def _changes_once_listened() -> Callable[..., Awaitable[Any]]:
    """``subscriptions/listen`` (2026-07-28) that announces one tool-list change after a moment."""
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

    bus = InMemorySubscriptionBus()
    handler = ListenHandler(bus)
    announced: list[bool] = []

    async def announce_later() -> None:
        await anyio.sleep(0.3)
        await bus.publish(ToolsListChanged())

    async def listen(ctx: Any, params: Any) -> Any:
        async with anyio.create_task_group() as tg:
            if not announced:
                announced.append(True)
                tg.start_soon(announce_later)
            return await handler(ctx, params)

    return listen


def _challenge(status: int, value: str) -> Callable[[Request], Awaitable[PlainTextResponse]]:
    async def answer(request: Request) -> PlainTextResponse:
        return PlainTextResponse("no", status_code=status, headers={"WWW-Authenticate": value})

    return answer


async def _down(request: Request) -> PlainTextResponse:
    return PlainTextResponse("service unavailable", status_code=503)


async def _status(request: Request) -> Response:
    """``/status/<code>``: every request answered with that status and an empty body."""
    return Response(status_code=int(request.path_params["code"]))


class _Secure:
    """``/secure``: the MCP app behind a bearer token (401 ``invalid_token`` without it)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/secure"):
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {TOKEN}".encode():
                deny = PlainTextResponse(
                    "unauthorized",
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
                )
                await deny(scope, receive, send)
                return
            scope = {**scope, "path": "/mcp", "raw_path": b"/mcp"}
        await self.app(scope, receive, send)


class _RefuseCalls:
    """``/refuse-calls-<code>/mcp``: the MCP app, except that a POST carrying ``tools/call`` is
    answered ``<code>`` with an empty body (a gateway failing mid-session)."""

    PREFIX: Final = "/refuse-calls-"

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith(self.PREFIX):
            await self.app(scope, receive, send)
            return
        code = int(path[len(self.PREFIX) :].split("/", 1)[0])
        scope = {**scope, "path": "/mcp", "raw_path": b"/mcp"}
        body, more = b"", scope["method"] == "POST"
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        if b'"tools/call"' in body:
            await Response(status_code=code)(scope, receive, send)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if scope["method"] == "POST" and not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _http_app() -> Any:
    routes = [
        Route("/authn", _challenge(401, 'Bearer error="invalid_token"'), methods=["GET", "POST"]),
        Route(
            "/authn-scope", _challenge(401, 'Bearer scope="tools:call"'), methods=["GET", "POST"]
        ),
        Route(
            "/authz",
            _challenge(403, 'Bearer error="insufficient_scope", scope="tools:call admin"'),
            methods=["GET", "POST"],
        ),
        Route("/down", _down, methods=["GET", "POST", "DELETE"]),
        Route("/status/{code:int}", _status, methods=["GET", "POST", "DELETE"]),
    ]
    app = build("healthy").streamable_http_app(host="127.0.0.1", custom_starlette_routes=routes)
    return _Secure(_RefuseCalls(app))


def _serve_http() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections queue from now on: no race with the test's first request
    port = sock.getsockname()[1]
    config = uvicorn.Config(_http_app(), log_level="warning", lifespan="on")
    print(f"http://127.0.0.1:{port}", flush=True)  # the test reads this line
    uvicorn.Server(config).run(sockets=[sock])


async def _serve_stdio(variant: str) -> None:
    from mcp.server.stdio import stdio_server

    server = build(variant)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        _serve_http()
    else:
        anyio.run(_serve_stdio, sys.argv[2])
