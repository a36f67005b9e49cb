"""LangChain's documented default client (``MultiServerMCPClient(...).get_tools()``): the tools
are listed in one session and each call runs in a fresh one; every call reads its own verdict,
judged against the server's discovery (docs/model.md#scope) and against what ``get_tools()``
handed the agent (the framework hook's install, docs/frameworks.md). Collected on the cells that
install langchain-mcp-adapters (it pins ``mcp < 2``: the ``mcp_latest_1x`` cell of noxfile.py).
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import pytest
from matrix_drivers import SERVER_PYTHON, STDIO_SERVER
from opentelemetry.sdk.trace import ReadableSpan
from processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio


def row(span: ReadableSpan) -> tuple[Any, ...]:
    a = span.attributes or {}
    return (
        span.name,
        a.get(A.VERDICT),
        a.get(A.REASON),
        a.get(A.CATALOG_INHERITED),
        a.get(A.CATALOG_CLIENT_SOURCE),
    )


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_langchain_default_client(
    transport: str, verdicts: Pipeline, reference_url: str
) -> None:
    """LangChain's documented default: ``get_tools()``, then a fresh session per tool call."""
    from langchain_mcp_adapters.client import MultiServerMCPClient

    connection: dict[str, Any] = (
        {"transport": "stdio", "command": SERVER_PYTHON, "args": [STDIO_SERVER]}
        if transport == "stdio"
        else {"transport": "streamable_http", "url": reference_url + "/mcp"}
    )
    with anyio.fail_after(120):
        client = MultiServerMCPClient({"reference": connection})  # type: ignore[dict-item]
        tools = {tool.name: tool for tool in await client.get_tools()}
        await tools["create_ticket"].ainvoke({"title": "t", "priority": "p"})
        with contextlib.suppress(Exception):  # the adapter raises on isError: the scenario
            await tools["fail"].ainvoke({})
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert [row(s) for s in verdicts.spans() if s.name.startswith("tools/call ")] == [
        # judged against the digest of what the framework installed (not the discovery result)
        ("tools/call create_ticket", "healthy", "ok", True, "digest"),
        ("tools/call fail", "tool_failed", "is_error", True, "digest"),
    ]
    # the framework hook recorded what get_tools() handed the agent, against the server
    [install] = [s for s in verdicts.spans() if s.name == A.INSTALL_SPAN_NAME]
    attrs = install.attributes or {}
    assert attrs[A.CATALOG_VERDICT] == "converged"
    assert attrs[A.CATALOG_CLIENT_TOOL_COUNT] == len(tools)
    assert A.SERVER_TARGET_KEY in attrs
