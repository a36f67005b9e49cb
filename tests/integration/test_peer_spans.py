"""Zero differences on a peer's own telemetry: FastMCP's client span and its caller's traceback.

FastMCP traces each request with a CLIENT span of its own and records the exception that leaves
it; the product enriches that span (borrowed) and must add no event of the owner's kind a second
time, and the application's traceback of a failed ``call_tool`` must show no frame of the product.
The same failing call (the server answers a JSON-RPC error: the SDK raises) runs once without the
product and once with it.
"""

from __future__ import annotations

import traceback
from typing import Any

import fastmcp
import pytest
from mcp import MCPError
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import McpHealthInstrumentor

pytestmark = pytest.mark.anyio

#: What a peer's test reads: its span's events and the caller's traceback.
Seen = tuple[list[tuple[str, dict[str, Any]]], list[str], dict[str, Any]]


async def _failing_call(url: str, exporter: InMemorySpanExporter) -> Seen:
    exporter.clear()
    async with fastmcp.Client(url + "/mcp") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("bad_args", {})
    (span,) = [
        s
        for s in exporter.get_finished_spans()
        if s.kind is SpanKind.CLIENT and getattr(s.instrumentation_scope, "name", "") == "fastmcp"
    ]
    events = [(event.name, dict(event.attributes or {})) for event in span.events]
    return events, traceback.format_tb(caught.value.__traceback__), dict(span.attributes or {})


async def test_a_failing_call_through_fastmcp_looks_the_same_with_the_product(
    sdk_exporter: InMemorySpanExporter, http_base_url: str
) -> None:
    plain_events, plain_frames, plain_attributes = await _failing_call(http_base_url, sdk_exporter)
    instrumentor = McpHealthInstrumentor()
    instrumentor.instrument(tracer_provider=TracerProvider())
    try:
        events, frames, attributes = await _failing_call(http_base_url, sdk_exporter)
    finally:
        instrumentor.uninstrument()
    assert A.SESSION_KEY not in plain_attributes
    assert A.SESSION_KEY in attributes  # the product was there: the span carries its evidence
    assert [name for name, _ in plain_events] == ["exception"]  # the owner's own record
    assert events == plain_events
    assert frames == plain_frames
    assert not [frame for frame in frames if "otel_mcp_health" in frame]
