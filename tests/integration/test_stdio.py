"""stdio: a real server subprocess through the real SDK (``mcp.Client`` and a raw session)."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from tests.integration.mcp_health_servers import ALL_TOOLS, CANARY_ENV
from tests.integration.mcp_health_support import STDIO_SERVER, Captured

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio

PARAMS = StdioServerParameters(
    command=sys.executable, args=[str(STDIO_SERVER)], env={"MCP_HEALTH_TEST_SECRET": CANARY_ENV}
)


async def test_stdio_session_and_crash(captured: Captured) -> None:
    with anyio.fail_after(30):
        async with Client(PARAMS, mode="legacy") as client:
            first = await client.list_tools()
            await client.list_tools(cursor=first.next_cursor)
            await client.call_tool("fail", {})
            with pytest.raises(MCPError) as closed:
                await client.call_tool("crash", {})
    assert closed.value.code == -32000
    handshake = captured.one("initialize").attributes or {}
    assert handshake[A.NETWORK_TRANSPORT] == "pipe"
    assert A.SERVER_ADDRESS not in handshake
    assert handshake[A.MCP_PROTOCOL_VERSION] == "2025-11-25"
    crash = captured.one("tools/call crash")
    attrs = crash.attributes or {}
    assert attrs[A.TRANSPORT_OUTCOME] == "process_exit"
    assert attrs[A.TRANSPORT_REQUEST_WRITTEN] is True
    assert attrs[A.ERROR_TYPE] == "process_exit"
    assert A.TOOL_READ_ONLY not in attrs  # no annotation: unknown
    assert A.RPC_RESPONSE_STATUS_CODE not in attrs
    pages = captured.named("tools/list")
    assert (pages[-1].attributes or {})[A.CATALOG_TOOL_COUNT] == len(ALL_TOOLS)
    assert all((s.attributes or {})[A.NETWORK_TRANSPORT] == "pipe" for s in captured.client_spans())
    assert captured.sdk_client_spans() == []


async def test_stdio_raw_session_timeout(captured: Captured) -> None:
    with anyio.fail_after(30):
        async with stdio_client(PARAMS) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            with pytest.raises(MCPError) as timed_out:
                await session.call_tool("slow", {"seconds": 5}, read_timeout_seconds=0.1)
    assert timed_out.value.code == -32001
    attrs = captured.one("tools/call slow").attributes or {}
    assert attrs[A.CALL_TIMED_OUT] is True
    assert attrs[A.CALL_DEADLINE_S] == 0.1
    assert attrs[A.NETWORK_TRANSPORT] == "pipe"


async def test_stdio_waiting_for_user(captured: Captured) -> None:
    """No context travels over pipes: the session's only open call is the one waiting."""
    during: list[object] = []

    async def elicitation(context: Any, params: Any) -> types.ElicitResult:
        call = next(s for s in captured.started if s.name == "tools/call ask")
        during.append((call.attributes or {}).get(A.CALL_WAITING_FOR_USER))
        return types.ElicitResult(action="accept", content={"ok": True})

    with anyio.fail_after(30):
        async with Client(PARAMS, mode="legacy", elicitation_callback=elicitation) as client:
            await client.call_tool("ask", {})
    assert during == [True]
    assert (captured.one("tools/call ask").attributes or {})[A.CALL_WAITING_FOR_USER] is False
