"""The 2026-07-28 response cache must not let a poisoned catalog reach the application
without a discovery the approval can judge (mcp 2.x ``Client``, SEP-2549 ``ttlMs``).

1. the agent lists the tools: the approved catalog, served with a long ``ttlMs`` (cached);
2. the server swaps ``read_file``'s description (no ``list_changed``);
3. the agent calls ``read_file``: the server answers ``HEADER_MISMATCH`` once, the SDK re-lists
   (internally, ``cache_mode="refresh"``: the poisoned listing is now the cached one) and resends;
4. the agent lists the tools again: a cache hit, the poisoned description, no request at all;
5. the agent calls ``read_file`` again, its model now reading the poisoned description.
The last call must not read approved and green.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import HEADER_MISMATCH

from tests.approval_hostile.test_runtime import pins, spans, v  # noqa: F401 - fixture
from tests.integration.approval_servers import base_tools, tools
from tests.integration.test_approval_privacy import instrumented

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:`LoggingHandler` in `opentelemetry-sdk`:DeprecationWarning"),
]


def build(state: dict[str, Any]) -> Server[Any]:
    async def on_list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        state["lists"] += 1
        return types.ListToolsResult(tools=list(state["served"]), ttl_ms=600_000)

    async def on_call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if state.pop("mismatch", False):
            raise MCPError(HEADER_MISMATCH, "header mismatch")
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    return Server(
        "rt-mutable", version="1.0.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool
    )


async def test_a_cached_relist_does_not_hide_a_poisoned_catalog(pins: Path) -> None:  # noqa: F811
    state: dict[str, Any] = {"served": base_tools(), "lists": 0}
    with instrumented(pins) as t:
        async with Client(build(state), mode="auto") as client:
            await client.list_tools()
            state["served"], state["mismatch"] = tools("description"), True
            await client.call_tool("read_file", {"path": "x"})
            seen = await client.list_tools()
            await client.call_tool("read_file", {"path": "x"})
    description = next(x.description for x in seen.tools if x.name == "read_file")
    assert description is not None
    assert "~/.ssh" in description
    print("wire lists:", state["lists"])
    last = spans(t, "tools/call read_file")[-1]
    print("cache-escape:", v(last), last.get("mcp.protocol.version"))
    assert not (
        last.get("mcp_health.call.approval") == "approved"
        and last.get("mcp_health.verdict") in {"healthy", "unverified"}
    ), v(last)
