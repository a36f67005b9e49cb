"""Two ``tools/list`` traversals at once in one session, on every SDK line, in-process and stdio.

One toolset wrapped twice (pydantic-ai's ``MCPToolset`` inside two wrapped toolsets), or two tasks
paging one session at the same time, interleave the pages of two traversals. Before, the second
first page replaced the traversal in progress, the first traversal's next page then read a loop
or a gap, and the session read ``incomplete`` on a normal path. Each traversal is now its own
cursor chain (a page continues the chain whose last ``nextCursor`` is its cursor): both read
``converged``. A chain that loops still reads ``cursor_loop``, and a client that starts
traversals and never finishes them keeps a bounded number open, in both halves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from tests.support.matrix_drivers import INTEGRATION, MCP_MAJOR, SERVER_PYTHON, Events, open_stdio
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation._state import session_state
from otel_mcp_health.instrumentation._traversals import MAX_OPEN_TRAVERSALS
from otel_mcp_health.processor import _traversals

pytestmark = pytest.mark.anyio

PAGED_SERVER = str(INTEGRATION / "paged_server.py")
TRANSPORTS = ["in_process", "stdio"]


@asynccontextmanager
async def _session(transport: str, mode: str) -> AsyncIterator[Any]:
    """A ``ClientSession`` of ``paged_server.py`` in ``mode``, in-process or over stdio."""
    if transport == "stdio":
        from mcp import StdioServerParameters

        parameters = StdioServerParameters(
            command=SERVER_PYTHON, args=[PAGED_SERVER, "stdio", mode]
        )
        async with open_stdio(parameters, Events()) as driver:
            yield driver.session
        return
    from tests.integration.paged_server import build

    if MCP_MAJOR == 1:
        from mcp.shared.memory import create_connected_server_and_client_session

        async with create_connected_server_and_client_session(build(mode)) as session:
            yield session
        return
    from mcp import Client

    async with Client(build(mode)) as client:
        yield client.session


class _Meeting:
    """Holds each traversal after its first page until every one has read its own: their
    chains are then all open at once, whatever the scheduling."""

    def __init__(self, parties: int) -> None:
        self._left = parties
        self._all_in = anyio.Event()

    async def arrive(self) -> None:
        self._left -= 1
        if self._left == 0:
            self._all_in.set()
        await self._all_in.wait()


async def _traverse(session: Any, meeting: _Meeting | None = None, *, pages: int = 8) -> None:
    """Page through the catalog by cursor, as an application does; give up after ``pages``."""
    from mcp import types

    cursor: str | None = None
    for read in range(1, pages + 1):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        result = await session.list_tools(params=params)
        if read == 1 and meeting is not None:
            await meeting.arrive()
        cursor = getattr(result, "nextCursor" if MCP_MAJOR == 1 else "next_cursor")
        if cursor is None:
            return


async def _at_once(session: Any, parties: int, *, pages: int = 8) -> None:
    meeting = _Meeting(parties)
    async with anyio.create_task_group() as group:
        for _ in range(parties):
            group.start_soon(lambda: _traverse(session, meeting, pages=pages))


def _catalog(span: ReadableSpan) -> tuple[Any, Any]:
    a = span.attributes or {}
    return a.get(A.CATALOG_VERDICT), a.get(A.CATALOG_REASON)


def _pages(verdicts: Pipeline) -> list[ReadableSpan]:
    """The application's ``tools/list`` pages (not the SDK's own listings inside a call)."""
    return [
        s
        for s in verdicts.named("tools/list")
        if (s.attributes or {}).get(A.EVIDENCE_ORIGIN) == A.ORIGIN_APPLICATION
    ]


def _ends(verdicts: Pipeline) -> list[ReadableSpan]:
    """The pages that ended a traversal (they carry the catalog verdict)."""
    return [s for s in _pages(verdicts) if A.CATALOG_VERDICT in (s.attributes or {})]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_two_concurrent_traversals_read_converged(transport: str, verdicts: Pipeline) -> None:
    with anyio.fail_after(60):
        async with _session(transport, "paged") as session:
            await _at_once(session, 2)
            await session.call_tool("echo", {"text": "t"})
    pages = _pages(verdicts)
    indices = sorted((s.attributes or {}).get(A.CATALOG_PAGE_INDEX) for s in pages)
    assert indices == [0, 0, 1, 1, 2, 2]  # two chains of three pages, each walked on its own
    ends = _ends(verdicts)
    assert [_catalog(s) for s in ends] == [("converged", "ok")] * 2
    assert [(s.attributes or {}).get(A.CATALOG_TOOL_COUNT) for s in ends] == [3, 3]
    call = verdicts.last("tools/call echo").attributes or {}
    assert (call[A.CATALOG_VERDICT], call[A.CALL_CONTRACT]) == ("converged", "ok")


@pytest.mark.parametrize("parties", [1, 2], ids=["alone", "concurrent"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_loop_within_one_chain_still_reads_cursor_loop(
    transport: str, parties: int, verdicts: Pipeline
) -> None:
    """0 -> 1 -> 2 -> 1 -> ...: each client gives up after six pages, then calls a tool."""
    with anyio.fail_after(60):
        async with _session(transport, "loop") as session:
            await _at_once(session, parties, pages=6)
            await session.call_tool("echo", {"text": "t"})
    assert len(_pages(verdicts)) == 6 * parties
    assert _ends(verdicts) == []  # no traversal ended
    call = verdicts.last("tools/call echo").attributes or {}
    assert _catalog(verdicts.last("tools/call echo")) == ("incomplete", "cursor_loop")
    assert (call[A.VERDICT], call[A.REASON]) == ("stale_catalog", "catalog_cursor_loop")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_unfinished_traversals_are_bounded(transport: str, verdicts: Pipeline) -> None:
    """A client that reads only the first page of many traversals: both halves keep at most
    their cap of open chains, and a complete traversal after them reads ``converged``."""
    started = 3 * MAX_OPEN_TRAVERSALS
    with anyio.fail_after(60):
        async with _session(transport, "paged") as session:
            for _ in range(started):
                await _traverse(session, pages=1)
            state = session_state(session)
            assert state is not None
            assert len(state.traversals) == MAX_OPEN_TRAVERSALS
            judged = verdicts.processor._engine.sessions._sessions[state.key]
            assert len(judged.open_traversals) == _traversals.MAX_OPEN_TRAVERSALS
            await _traverse(session)  # continues the chain it started, not an abandoned one
            assert len(state.traversals) == MAX_OPEN_TRAVERSALS - 1  # the complete one closed
            await session.call_tool("echo", {"text": "t"})
    assert len(_pages(verdicts)) == started + 3
    assert [_catalog(s) for s in _ends(verdicts)] == [("converged", "ok")]
    assert _catalog(verdicts.last("tools/call echo")) == ("converged", "ok")
