"""A server the instrumentation's registry forgot is missing evidence, never green.

A session that made no discovery of its own (a session-per-call client) is checked against its
server's last complete discovery, which the instrumentation keeps in a bounded registry (by count
and by bytes). When the registry forgets that server while the processor still remembers it,
the session's calls went unchecked: no ``mcp_health.call.contract``, and a call the processor
judged on the inherited catalog read ``healthy`` with nothing saying a check was skipped. Now such
a call carries ``mcp_health.evidence.missing = [server_discovery]`` and is never ``healthy``.

The registry's bounds are shrunk here (one server; a byte budget below one discovery) so that two
real servers exercise them; the servers, clients and pipeline are the real ones.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from opentelemetry.trace import SpanKind
from tests.support.matrix_drivers import INTEGRATION, MCP_MAJOR, SERVER_PYTHON, Events, open_stdio
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import _servers, flush_receipts
from otel_mcp_health.instrumentation._servers import ServerDiscoveries

pytestmark = pytest.mark.anyio

PAGED_SERVER = str(INTEGRATION / "paged_server.py")
TRANSPORTS = ["in_process", "stdio"]


@pytest.fixture
def echo_verified() -> Iterator[None]:
    """A verifier that confirms every ``echo``: an unchecked call would otherwise read healthy."""
    from otel_mcp_health.verifiers import clear_verifiers, register_verifier

    clear_verifiers()
    register_verifier("echo", lambda call: True, method="destination_query")
    yield
    clear_verifiers()


class _Servers:
    """Sessions of ``paged_server.py`` servers: in-process, one server object per mode (a
    session of a mode is a session of the same server), or over stdio (one command line per
    mode)."""

    def __init__(self, transport: str) -> None:
        self.transport = transport
        self._objects: dict[str, Any] = {}

    @asynccontextmanager
    async def session(self, mode: str) -> AsyncIterator[Any]:
        if self.transport == "stdio":
            from mcp import StdioServerParameters

            parameters = StdioServerParameters(
                command=SERVER_PYTHON, args=[PAGED_SERVER, "stdio", mode]
            )
            async with open_stdio(parameters, Events()) as driver:
                yield driver.session
            return
        from tests.integration.paged_server import build

        server = self._objects.setdefault(mode, build(mode))
        if MCP_MAJOR == 1:
            from mcp.shared.memory import create_connected_server_and_client_session

            async with create_connected_server_and_client_session(server) as session:
                yield session
            return
        from mcp import Client

        async with Client(server) as client:
            yield client.session


async def _list_all(session: Any) -> None:
    from mcp import types

    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        result = await session.list_tools(params=params)
        cursor = getattr(result, "nextCursor" if MCP_MAJOR == 1 else "next_cursor")
        if cursor is None:
            return


async def _fresh_call(servers: _Servers, mode: str) -> None:
    """One ``echo`` in a session of its own that lists nothing (a session-per-call client)."""
    async with servers.session(mode) as session:
        await session.call_tool("echo", {"text": "t"})


def _calls(verdicts: Pipeline) -> list[dict[str, Any]]:
    return [
        dict(s.attributes or {})
        for s in verdicts.named("tools/call echo")
        if s.kind is SpanKind.CLIENT
    ]


def _row(call: dict[str, Any]) -> tuple[Any, ...]:
    return (
        call.get(A.VERDICT),
        call.get(A.REASON),
        call.get(A.CATALOG_VERDICT),
        call.get(A.CATALOG_INHERITED),
        call.get(A.CALL_CONTRACT),
        tuple(call.get(A.EVIDENCE_MISSING) or ()),
    )


INHERITED_AND_CHECKED = ("healthy", "ok", "converged", True, "ok", ())
FORGOTTEN = ("unverified", "evidence_missing", "converged", True, None, ("server_discovery",))


@pytest.mark.usefixtures("echo_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_server_evicted_by_count(
    transport: str, verdicts: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Server ``a`` is discovered, then ``b`` takes the registry's one place: a fresh session of
    ``a`` is unchecked and says so; one of ``b`` is checked and healthy."""
    monkeypatch.setattr(_servers, "SERVERS", ServerDiscoveries(max_servers=1))
    servers = _Servers(transport)
    with anyio.fail_after(60):
        async with servers.session("paged-a") as session:
            await _list_all(session)
        await _fresh_call(servers, "paged-a")
        async with servers.session("paged-b") as session:
            await _list_all(session)
        await _fresh_call(servers, "paged-a")
        await _fresh_call(servers, "paged-b")
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert [_row(call) for call in _calls(verdicts)] == [
        INHERITED_AND_CHECKED,
        FORGOTTEN,
        INHERITED_AND_CHECKED,
    ]


@pytest.mark.usefixtures("echo_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_discovery_over_the_byte_budget(
    transport: str, verdicts: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A discovery larger than the registry's byte budget is kept by its own session only: that
    session's calls are checked, a fresh session's are not and say so."""
    monkeypatch.setattr(_servers, "SERVERS", ServerDiscoveries(max_bytes=1_000))
    servers = _Servers(transport)
    with anyio.fail_after(60):
        async with servers.session("paged-a") as session:
            await _list_all(session)
            await session.call_tool("echo", {"text": "t"})
        await _fresh_call(servers, "paged-a")
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert [_row(call) for call in _calls(verdicts)] == [
        ("healthy", "ok", "converged", None, "ok", ()),
        FORGOTTEN,
    ]
