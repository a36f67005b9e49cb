"""A TCP proxy on 127.0.0.1 that can cut the connections carrying an HTTP GET (test helper).

A real network fault between client and server: the server keeps running, the client's stream
for server messages (an SSE stream, a streamable-HTTP GET stream) drops mid-session, and every
POST passes untouched. Runs on the test's asyncio loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field


@dataclass
class CutProxy:
    """Forwards every connection to ``upstream``; :meth:`cut_gets` aborts those opened by a GET."""

    upstream: int
    port: int = 0
    _links: list[tuple[bytes, asyncio.StreamWriter, asyncio.StreamWriter]] = field(
        default_factory=list
    )

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(Exception):
            writer.close()

    async def _link(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.upstream)
        first = await client_r.read(65536)
        self._links.append((first[:4], client_w, server_w))
        server_w.write(first)
        await server_w.drain()
        await asyncio.gather(self._pipe(client_r, server_w), self._pipe(server_r, client_w))

    def cut_gets(self) -> int:
        """Abort every open connection whose first request was a GET; how many were cut."""
        cut = 0
        for start, client_w, server_w in self._links:
            if start == b"GET " and not client_w.is_closing():
                client_w.transport.abort()
                server_w.transport.abort()
                cut += 1
        return cut

    def close(self) -> None:
        for _, client_w, server_w in self._links:
            client_w.transport.abort()
            server_w.transport.abort()


@contextlib.asynccontextmanager
async def cut_proxy(upstream_port: int) -> AsyncIterator[CutProxy]:
    """A :class:`CutProxy` to ``127.0.0.1:upstream_port``, listening on a free port."""
    proxy = CutProxy(upstream_port)
    server = await asyncio.start_server(proxy._link, "127.0.0.1", 0)
    proxy.port = server.sockets[0].getsockname()[1]
    async with server:
        try:
            yield proxy
        finally:
            proxy.close()
