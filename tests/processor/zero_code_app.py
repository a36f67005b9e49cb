"""A plain MCP client application: no OpenTelemetry code, no import of otel_mcp_health.

Run by ``test_zero_code`` (and ``tests/test_exit_time.py``) from the repository root as
``opentelemetry-instrument python -m tests.processor.zero_code_app``, so ``-m`` puts the root on
``sys.path`` and the integration suite's server imports as ``tests.integration.*``; everything the
test asserts comes from the installed entry points and environment variables alone.
"""

from __future__ import annotations

import anyio
from mcp import Client
from tests.integration.mcp_health_servers import build_server


async def main() -> None:
    async with Client(build_server(), mode="legacy") as client:
        first = await client.list_tools()
        await client.list_tools(cursor=first.next_cursor)
        await client.call_tool("create_ticket", {"title": "t", "priority": "p"})
        await client.call_tool("fail", {})


if __name__ == "__main__":
    anyio.run(main)
