"""A gateway on one host and port, as its own process (``python gateway_http.py SECRET``).

Several distinct reference servers (``build_server()``, one name and version) behind one
``127.0.0.1:<port>``, the layout of an MCP gateway or a hosted MCP service:

* ``/github/mcp`` and ``/jira/mcp``: two servers over streamable HTTP, told apart by the path only;
* ``/k/SECRET/mcp``: a server whose path carries an API key (Zapier-style URLs), for the privacy
  canary;
* ``/sse`` (with its message endpoint ``/messages/``): a server over the SSE transport;
* ``/sse-authn`` and ``/sse-authz``: SSE endpoints that refuse the connecting GET with 401
  ``invalid_token`` and 403 ``insufficient_scope``.

A query on any URL reaches the same server (a tenant parameter the gateway reads elsewhere).
Prints its base URL (``http://127.0.0.1:<port>``) on the first line of stdout, then serves until
it is terminated. Run by the project's own interpreter (mcp 2.x), whatever SDK the client has.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp_health_servers import _authn, _authz, _free_port, build_server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp


def _sse_routes(server: Server[Any]) -> list[Route | Mount]:
    """``server`` over the SSE transport: the connecting GET and its message endpoint."""
    transport = SseServerTransport("/messages/")

    async def connect(request: Request) -> Response:
        async with transport.connect_sse(request.scope, request.receive, request._send) as (
            read,
            write,
        ):
            await server.run(read, write, server.create_initialization_options())
        return Response()

    return [
        Route("/sse", connect, methods=["GET"]),
        Mount("/messages/", app=transport.handle_post_message),
        Route("/sse-authn", _authn, methods=["GET", "POST"]),
        Route("/sse-authz", _authz, methods=["GET", "POST"]),
    ]


def gateway(secret: str) -> Starlette:
    """The gateway's routes; its lifespan runs every mounted server's session manager."""
    mounted: dict[str, ASGIApp] = {
        f"/{path}": build_server().streamable_http_app(host="127.0.0.1")
        for path in ("github", "jira", f"k/{secret}")
    }

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for sub in mounted.values():
                assert isinstance(sub, Starlette)
                await stack.enter_async_context(sub.router.lifespan_context(sub))
            yield

    routes: list[Route | Mount] = [Mount(path, app=sub) for path, sub in mounted.items()]
    return Starlette(routes=[*_sse_routes(build_server()), *routes], lifespan=lifespan)


async def main() -> None:
    port = _free_port()
    config = uvicorn.Config(
        gateway(sys.argv[1]), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
    )
    userver = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(userver.serve)
        with anyio.fail_after(10):
            while not userver.started:  # noqa: ASYNC110  # uvicorn exposes a flag, no event
                await anyio.sleep(0.01)
        print(f"http://127.0.0.1:{port}", flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main)
