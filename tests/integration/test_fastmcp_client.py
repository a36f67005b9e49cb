"""A third-party higher-level client built on the SDK's ``ClientSession``: FastMCP's ``Client``.

FastMCP traces each request itself with a CLIENT span (on the global provider). Semconv: an MCP
instrumentation that finds such a span must not add a second one but enrich it. So across both
pipelines there is exactly one CLIENT span per request, and FastMCP's spans carry our evidence.
``fastmcp`` is in the ``test`` extra.
"""

from __future__ import annotations

from typing import Any

import fastmcp
import pytest
from opentelemetry.sdk.trace import Span
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from tests.integration.mcp_health_servers import ALL_TOOLS
from tests.integration.mcp_health_support import Captured
from tests.support.processor_helpers import Pipeline, instrumenting

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio


async def test_fastmcp_client_over_http(captured: Captured, http_base_url: str) -> None:
    async with fastmcp.Client(http_base_url + "/mcp") as client:
        tools = await client.list_tools()  # FastMCP pages through the whole catalog itself
        result = await client.call_tool("lookup", {"q": "x"})
        with pytest.raises(fastmcp.exceptions.ToolError):
            await client.call_tool("fail", {})
    assert len(tools) == len(ALL_TOOLS)
    assert result.is_error is False
    ours = captured.client_spans()
    theirs = captured.sdk_client_spans()
    # FastMCP does not trace the handshake: that span is ours; every other request has one span
    assert [s.name for s in ours] == ["server/discover"]
    assert [s.name for s in theirs] == [
        "tools/list",
        "tools/list",
        "tools/call lookup",
        "tools/call fail",
    ]
    assert {getattr(s.instrumentation_scope, "name", None) for s in theirs} == {"fastmcp"}
    key = (ours[0].attributes or {})[A.SESSION_KEY]
    assert all((s.attributes or {})[A.SESSION_KEY] == key for s in theirs)
    last_page = theirs[1].attributes or {}
    assert last_page[A.CATALOG_TOOL_COUNT] == len(ALL_TOOLS)
    assert last_page[A.EVIDENCE_ORIGIN] == A.ORIGIN_APPLICATION
    assert last_page[A.NETWORK_TRANSPORT] == "tcp"
    lookup = theirs[2].attributes or {}
    assert lookup[A.TOOL_READ_ONLY] is True
    assert lookup[A.CALL_CONTRACT] == A.CONTRACT_OK
    assert lookup[A.TRANSPORT_OUTCOME] == "ok"
    fail = theirs[3].attributes or {}
    assert fail[A.ERROR_TYPE] == A.ERROR_TYPE_TOOL_ERROR
    assert fail[A.CALL_IS_ERROR] is True


async def test_a_borrowed_span_is_written_through_its_owners_api(
    sdk_exporter: InMemorySpanExporter, http_base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a pipeline where our own spans get their attributes written directly
    (``otel_mcp_health._sdkspan``), FastMCP's spans still get ours through ``set_attributes``,
    at their start and at their end, and carry the same evidence."""
    written: list[tuple[str, str]] = []
    public = Span.set_attributes

    def spy(span: Span, attributes: Any) -> None:
        written.append((getattr(span.instrumentation_scope, "name", ""), span.name))
        public(span, attributes)

    monkeypatch.setattr(Span, "set_attributes", spy)
    pipeline = Pipeline.build()
    sdk_exporter.clear()
    with instrumenting(pipeline):
        async with fastmcp.Client(http_base_url + "/mcp") as client:
            await client.list_tools()
            await client.call_tool("lookup", {"q": "x"})
    ours = [s for s in pipeline.spans() if s.kind is SpanKind.CLIENT]
    (call,) = [
        s
        for s in sdk_exporter.get_finished_spans()
        if s.name == "tools/call lookup" and s.kind is SpanKind.CLIENT
    ]
    assert ours[0].name == "server/discover"
    assert "tools/call lookup" not in [s.name for s in ours]  # one span per request: FastMCP's
    assert written.count(("fastmcp", "tools/call lookup")) == 2  # start and end
    assert all(scope == "fastmcp" for scope, _ in written)  # ours: written directly
    attrs = call.attributes or {}
    assert attrs[A.SESSION_KEY] == (ours[0].attributes or {})[A.SESSION_KEY]
    assert attrs[A.TRANSPORT_OUTCOME] == "ok"
    assert attrs[A.CALL_CONTRACT] == A.CONTRACT_OK
