"""A plain MCP client application: no OpenTelemetry code, no import of otel_mcp_health.

Run by ``test_zero_code`` as ``opentelemetry-instrument python zero_code_app.py``; everything the
test asserts comes from the installed entry points and environment variables alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import Client

sys.path.insert(0, str(Path(__file__).parent.parent / "integration"))
from mcp_health_servers import build_server


async def main() -> None:
    async with Client(build_server(), mode="legacy") as client:
        first = await client.list_tools()
        await client.list_tools(cursor=first.next_cursor)
        await client.call_tool("create_ticket", {"title": "t", "priority": "p"})
        await client.call_tool("fail", {})


if __name__ == "__main__":
    anyio.run(main)
