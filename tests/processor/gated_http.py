"""A real streamable-HTTP MCP server behind a gate that can start refusing requests mid-session.

The gate is plain ASGI in front of the SDK's Starlette app: while ``gate.status`` is set, every
``POST /mcp`` is answered with that status (401 with an ``invalid_token`` challenge, 403 with an
``insufficient_scope`` challenge naming a scope, or a 5xx) before the MCP server sees it. This
reproduces an access token expiring, or a backend going down, in the middle of an agent's run.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import uvicorn
from starlette.responses import PlainTextResponse

_CHALLENGES = {
    401: 'Bearer error="invalid_token", error_description="the token expired"',
    403: 'Bearer error="insufficient_scope", scope="tickets:write"',
}


class Gate:
    """ASGI middleware: refuse ``POST /mcp`` with ``status`` while it is set.

    It also signals ``ready`` once the app's lifespan startup completed (the SDK's session
    manager runs in the lifespan), so a test waits on an event instead of polling.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.status: int | None = None
        self.ready = anyio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":

            async def signalling_send(message: Any) -> None:
                await send(message)
                if message["type"] == "lifespan.startup.complete":
                    self.ready.set()

            await self.app(scope, receive, signalling_send)
            return
        refused = self.status is not None and scope["method"] == "POST" and scope["path"] == "/mcp"
        if not refused:
            await self.app(scope, receive, send)
            return
        assert self.status is not None
        challenge = _CHALLENGES.get(self.status)
        headers = {"WWW-Authenticate": challenge} if challenge else {}
        response = PlainTextResponse("refused", status_code=self.status, headers=headers)
        await response(scope, receive, send)


@asynccontextmanager
async def serve_gated(server: Any) -> AsyncIterator[tuple[str, Gate]]:
    """Serve ``server`` at ``http://127.0.0.1:<port>/mcp`` behind a :class:`Gate`.

    The listening socket is bound before uvicorn starts, so connections made after ``ready``
    wait in the backlog instead of being refused.
    """
    gate = Gate(server.streamable_http_app(host="127.0.0.1"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    config = uvicorn.Config(gate, log_level="warning", lifespan="on")
    userver = uvicorn.Server(config)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: userver.serve(sockets=[sock]))
            with anyio.fail_after(10):
                await gate.ready.wait()
            try:
                yield f"http://127.0.0.1:{port}/mcp", gate
            finally:
                userver.should_exit = True
    finally:
        sock.close()
