"""Hostile MCP servers for the probe tests (``python hostile_servers.py``).

Paths on one 127.0.0.1 port (printed on stdout's first line):
``/evil/mcp`` a server whose name breaks Prometheus text (quote, ``}``, ``#``, newline, CR);
``/surrogate/mcp`` a server whose name holds a lone UTF-16 surrogate (valid JSON ``\\ud800``);
``/slow/mcp`` healthy, each tools/list page 1 s; ``/many/mcp`` 10,000 tools in one page;
``/endless/mcp`` a new cursor on every page;
``/hang/mcp`` accepts the POST and never answers; ``/redirect/mcp`` a 307 to another origin
(``localhost`` instead of ``127.0.0.1``) whose ``/sink`` records the headers it got
(``GET /sunk``); ``/counts`` JSON-RPC messages received, by path and method.
"""

from __future__ import annotations

import json
import socket
import sys
from collections import Counter
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "check"))
import check_servers

EVIL_NAME = 'ev"il} 1\n# TYPE x counter\r\\x{a="b"} 9'
SURROGATE_NAME = "bad\ud800name"
COUNTS: Counter[str] = Counter()
SUNK: list[dict[str, str]] = []
PORT: list[int] = []


def _named(name: str) -> Any:
    return check_servers._Server(
        name,
        version="1",
        on_list_tools=check_servers._list_two_pages,
        on_call_tool=check_servers._call,
    )


def _many() -> Any:
    tools = [types.Tool(name=f"t{i}", input_schema={"type": "object"}) for i in range(10_000)]

    async def listing(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    return check_servers._Server(
        "many", version="1", on_list_tools=listing, on_call_tool=check_servers._call
    )


def _slow() -> Any:
    """The healthy server, except that every tools/list page takes one second."""

    async def listing(ctx: Any, params: Any) -> types.ListToolsResult:
        await anyio.sleep(1.0)
        return await check_servers._list_two_pages(ctx, params)

    return check_servers._Server(
        "slow", version="1", on_list_tools=listing, on_call_tool=check_servers._call
    )


def _endless() -> Any:
    async def listing(ctx: Any, params: Any) -> types.ListToolsResult:
        n = int(params.cursor) if params is not None and params.cursor else 0
        return types.ListToolsResult(
            tools=[types.Tool(name=f"t{n}", input_schema={"type": "object"})],
            next_cursor=str(n + 1),
        )

    return check_servers._Server(
        "endless", version="1", on_list_tools=listing, on_call_tool=check_servers._call
    )


class _Front:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        seg = "/" + path.strip("/").split("/")[0]
        if scope["method"] == "POST" and seg not in ("/hang", "/redirect", "/sink"):
            chunks, more = [], True
            while more:
                m = await receive()
                chunks.append(m.get("body", b""))
                more = m.get("more_body", False)
            body = b"".join(chunks)
            try:
                d = json.loads(body)
                for item in d if isinstance(d, list) else [d]:
                    if isinstance(item, dict) and "method" in item:
                        COUNTS[f"{seg} {item['method']}"] += 1
            except ValueError:
                pass
            done = [False]

            async def replay() -> Any:
                if not done[0]:
                    done[0] = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
            return
        if scope["method"] == "DELETE":
            COUNTS[f"{seg} DELETE"] += 1
        await self.app(scope, receive, send)


async def _hang(request: Request) -> Response:
    COUNTS["/hang " + request.method] += 1
    await anyio.sleep(3600)
    return Response()


async def _redirect(request: Request) -> Response:
    COUNTS["/redirect " + request.method] += 1
    return Response(status_code=307, headers={"Location": f"http://localhost:{PORT[0]}/sink"})


async def _sink(request: Request) -> Response:
    SUNK.append({k.lower(): v for k, v in request.headers.items()})
    return Response(status_code=404)


async def _sunk(request: Request) -> JSONResponse:
    return JSONResponse(SUNK)


async def _counts(request: Request) -> JSONResponse:
    return JSONResponse(dict(COUNTS))


def app() -> Any:
    mounted = {
        "/evil": _named(EVIL_NAME).streamable_http_app(host="127.0.0.1"),
        "/surrogate": _named(SURROGATE_NAME).streamable_http_app(host="127.0.0.1"),
        "/many": _many().streamable_http_app(host="127.0.0.1"),
        "/endless": _endless().streamable_http_app(host="127.0.0.1"),
        "/slow": _slow().streamable_http_app(host="127.0.0.1"),
        "/plain": check_servers.build("healthy").streamable_http_app(host="127.0.0.1"),
    }

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> Any:
        async with AsyncExitStack() as stack:
            for sub in mounted.values():
                await stack.enter_async_context(sub.router.lifespan_context(sub))
            yield

    routes = [
        Route("/counts", _counts),
        Route("/sunk", _sunk),
        Route("/hang/mcp", _hang, methods=["GET", "POST", "DELETE"]),
        Route("/redirect/mcp", _redirect, methods=["GET", "POST", "DELETE"]),
        Route("/sink", _sink, methods=["GET", "POST", "DELETE"]),
        *[Mount(p, app=s) for p, s in mounted.items()],
    ]
    return _Front(Starlette(routes=routes, lifespan=lifespan))


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    PORT.append(sock.getsockname()[1])
    print(f"http://127.0.0.1:{PORT[0]}", flush=True)
    uvicorn.Server(uvicorn.Config(app(), log_level="warning", lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    main()
