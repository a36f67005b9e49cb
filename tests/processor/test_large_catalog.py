"""A catalog with large tools, end to end: the real client, a real server, the processor.

Tools of 1 MiB (a long description, a large ``inputSchema``) travel the SDK's transports (stdio
reads in chunks; HTTP bodies in frames) and reach the digest whole: the catalog converges and its
digest is the ``rfc8785`` reference digest of what the server listed.
"""

from __future__ import annotations

import hashlib
from typing import Any

import anyio
import mcp_types as types
import pytest
import rfc8785
from mcp import Client
from mcp.server import Server, ServerRequestContext
from tests.integration.mcp_health_servers import serve_http
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.core.digest import project_tool

pytestmark = pytest.mark.anyio
MIB = 1024 * 1024
_BIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {f"p{i:05d}": {"type": "string", "description": "x" * 200} for i in range(5000)},
}
TOOLS = [
    types.Tool(name="long", description="é" * (MIB // 2), input_schema={"type": "object"}),
    types.Tool(name="wide", description="many properties", input_schema=_BIG_SCHEMA),
    types.Tool(name="small", description="small", input_schema={"type": "object"}),
]


def _server() -> Server[Any]:
    async def on_list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    return Server("large-catalog", version="1.0.0", on_list_tools=on_list_tools)


def _reference_digest(listed: list[Any]) -> str:
    wire = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed]
    projected = sorted((project_tool(t) for t in wire), key=lambda t: t["name"])
    return "sha256:" + hashlib.sha256(rfc8785.dumps(projected)).hexdigest()


@pytest.mark.parametrize("transport", ["in-process", "http"])
async def test_large_tools_digest_whole(transport: str, instrumented: Pipeline) -> None:
    with anyio.fail_after(60):
        if transport == "http":
            async with serve_http(_server()) as base, Client(base + "/mcp") as client:
                listed = (await client.list_tools()).tools
        else:
            async with Client(_server()) as client:
                listed = (await client.list_tools()).tools
    assert len(listed) == 3
    page = instrumented.last("tools/list").attributes or {}
    assert page[A.CATALOG_VERDICT] == "converged"
    assert page[A.CATALOG_DIGEST] == _reference_digest(listed)
