"""A host that calls ``meta_server.py`` over stdio and prints the ``_meta`` everyone saw.

``python propagation_host.py instrumented|plain``. No global tracer provider is ever set: the
instrumented host gives ours a private provider. Prints one JSON object: the ``_meta`` the server
handler received, the ``_meta`` of the elicitation request the host's callback received, and the
trace ids of our exported CLIENT spans.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_mcp_health as omh

SERVER = StdioServerParameters(
    command=sys.executable, args=[str(Path(__file__).with_name("meta_server.py"))]
)


async def main(mode: str) -> None:
    exporter = InMemorySpanExporter()
    if mode == "instrumented":
        provider = TracerProvider()
        provider.add_span_processor(omh.McpHealthSpanProcessor(SimpleSpanProcessor(exporter)))
        omh.McpHealthInstrumentor().instrument(tracer_provider=provider)
    elicited: list[dict[str, Any]] = []

    async def elicitation(context: Any, params: Any) -> types.ElicitResult:
        elicited.append(dict(params.meta or {}))
        return types.ElicitResult(action="accept", content={"ok": True})

    async with Client(SERVER, mode="legacy", elicitation_callback=elicitation) as client:
        echoed = await client.call_tool("echo_meta", {})
        asked = await client.call_tool("ask", {})
    spans = {s.name: format(s.context.trace_id, "032x") for s in exporter.get_finished_spans()}
    print(
        json.dumps(
            {
                "server": (echoed.structured_content or {}).get("meta"),
                "server_ask": (asked.structured_content or {}).get("meta"),
                "elicitation": elicited,
                "traces": spans,
            }
        )
    )


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
