"""A host program whose outcome verifier hangs forever (run as a subprocess by test_exit.py).

``python hung_verifier_program.py MODE``; MODE is ``plain`` (no instrumentation), ``pending``
(instrumented; the verifier's timeout is far beyond the program's life, so the receipt is still
outstanding at exit), ``expired`` (instrumented; the timeout fires, ``flush_receipts`` returns,
the worker thread is still hung at exit) or ``slow`` (instrumented; the verifier answers
``True`` after 0.2 s, while the program is already exiting). Prints what the host saw, then one
JSON line per exported span (written by the tracer provider's own exit hook).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Sequence

import anyio
from delivery_server import TOOL, build_server
from mcp import Client
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import otel_mcp_health as omh


class StdoutExporter(SpanExporter):
    """Prints each exported span as one ``SPAN {json}`` line (name and attributes) and flushes, so
    the parent reads the spans even of a child that hangs."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            print(
                "SPAN " + json.dumps({"name": span.name, "attributes": dict(span.attributes or {})})
            )
        sys.stdout.flush()
        return SpanExportResult.SUCCESS


def hang_forever(call: omh.CallContext) -> bool:
    threading.Event().wait()
    return True


def answer_late(call: omh.CallContext) -> bool:
    time.sleep(0.2)
    return True


async def main(mode: str) -> None:
    if mode != "plain":
        provider = TracerProvider()  # its exit hook exports the spans still ending at exit
        provider.add_span_processor(
            omh.McpHealthSpanProcessor(SimpleSpanProcessor(StdoutExporter()))
        )
        omh.McpHealthInstrumentor().instrument(tracer_provider=provider)
    if mode == "slow":
        omh.register_verifier(TOOL, answer_late, timeout=600)
    else:
        omh.register_verifier(TOOL, hang_forever, timeout=600 if mode == "pending" else 0.3)
    async with Client(build_server()) as client:
        await client.list_tools()
        result = await client.call_tool(TOOL, {})
    print("HOST " + repr((result.is_error, result.structured_content)), flush=True)
    if mode == "expired":
        print(
            "FLUSHED " + repr(await anyio.to_thread.run_sync(omh.flush_receipts, 5.0)), flush=True
        )


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
