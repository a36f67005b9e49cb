"""Load programs of the fault matrix (run as subprocesses by test_matrix.py); print one JSON line.

* ``python load_host.py concurrent N``: N sessions against real in-process servers at once, half
  as asyncio tasks on one loop, half spread over 10 threads with a loop each; prints the exported
  span counts by name and the call verdicts.
* ``python load_host.py state N PAGES TRACED``: records the spans of one real instrumented
  session whose catalog has PAGES pages, then replays them through a fresh
  ``McpHealthSpanProcessor`` as N sessions (distinct session keys), the first TRACED under
  tracemalloc; prints the retained bytes per session and the process RSS.
"""

from __future__ import annotations

import gc
import json
import sys
import threading
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import hostile
from mcp import Client
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, TraceFlags

import otel_mcp_health as omh
from otel_mcp_health import attributes as A


def pipeline(exporter: SpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(omh.McpHealthSpanProcessor(SimpleSpanProcessor(exporter)))
    return provider


async def one_session(catalog: str = "normal") -> None:
    async with Client(hostile.build_server(catalog)) as client:
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            cursor = page.next_cursor
            if cursor is None:
                break
        await client.call_tool("echo", {"secret": hostile.CANARY_ARG})


async def many(n: int) -> None:
    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(one_session)


def concurrent(n: int) -> dict[str, Any]:
    exporter = InMemorySpanExporter()
    omh.McpHealthInstrumentor().instrument(tracer_provider=pipeline(exporter))
    omh.outcome_not_required("echo")
    threads = [threading.Thread(target=anyio.run, args=(many, n // 2 // 10)) for _ in range(10)]
    for thread in threads:
        thread.start()
    anyio.run(many, n - n // 2 // 10 * 10)
    for thread in threads:
        thread.join()
    spans = exporter.get_finished_spans()
    calls = [s for s in spans if s.name == "tools/call echo"]
    return {
        "names": Counter(s.name for s in spans),
        "verdicts": Counter(str((s.attributes or {}).get(A.VERDICT)) for s in calls),
        "catalogs": Counter(str((s.attributes or {}).get(A.CATALOG_VERDICT)) for s in calls),
        "sessions": len({(s.attributes or {}).get(A.SESSION_KEY) for s in spans}),
    }


class Counting(SpanExporter):
    """Keeps no spans: counts the exported ``tools/call`` spans by verdict, for the report."""

    def __init__(self) -> None:
        self.verdicts: Counter[str] = Counter()

    def export(self, spans: Any) -> SpanExportResult:
        for span in spans:
            if span.name.startswith("tools/call"):
                self.verdicts[str((span.attributes or {}).get(A.VERDICT))] += 1
        return SpanExportResult.SUCCESS


SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def template(pages: int) -> list[ReadableSpan]:
    """The spans of one real instrumented session over a catalog of ``pages`` pages."""
    exporter = InMemorySpanExporter()
    instrumentor = omh.McpHealthInstrumentor()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor.instrument(tracer_provider=provider)
    anyio.run(one_session, "long_chain" if pages > 1 else "normal")
    instrumentor.uninstrument()
    return [s for s in exporter.get_finished_spans() if s.name != A.SESSION_END_SPAN_NAME]


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _coverage_paused() -> Any:
    """Stop the coverage measurement of this process, if one runs (``make coverage`` measures
    subprocesses too), and return it to restart: the arcs it records while the sessions are
    replayed would be counted as retained bytes per session."""
    try:
        import coverage
    except ImportError:
        return None
    current = coverage.Coverage.current()
    if current is not None:
        current.stop()
    return current


def state(n: int, pages: int, traced: int) -> dict[str, Any]:
    """Replay N sessions; the first ``traced`` under tracemalloc, the rest for the RSS figure.

    With ``pages`` > 1 each session is the worst case: a complete traversal past the page cap,
    then a second traversal left unfinished one page before its end.
    """
    spans = template(pages)
    if pages > 1:
        listing = [s for s in spans if s.name == "tools/list"]
        spans = [*spans, *listing[:-1]]
    exporter = Counting()
    processor = omh.McpHealthSpanProcessor(SimpleSpanProcessor(exporter))

    def replay(first: int, last: int) -> None:
        """Hand each session's spans to the processor's ``on_end``, as the SDK does."""
        for i in range(first, last):
            key = f"load-session-{i}"
            for j, span in enumerate(spans):
                context = SpanContext(i + 1, j + 1, is_remote=False, trace_flags=SAMPLED)
                attrs = {**(span.attributes or {}), A.SESSION_KEY: key}
                processor.on_end(
                    ReadableSpan(
                        span.name,
                        context=context,
                        attributes=attrs,
                        kind=span.kind,
                        instrumentation_scope=span.instrumentation_scope,
                        start_time=span.start_time,
                        end_time=span.end_time,
                        resource=span.resource,
                    )
                )

    gc.collect()
    measuring = _coverage_paused()  # coverage's own line data is no state of ours
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    replay(0, traced)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    if measuring is not None:
        measuring.start()
    retained = sum(s.size_diff for s in after.compare_to(before, "filename"))
    replay(traced, n)
    return {
        "sessions": n,
        "traced_sessions": traced,
        "spans_per_session": len(spans),
        "retained_bytes": retained,
        "bytes_per_session": retained // traced,
        "rss_kib": rss_kib(),
        "verdicts": exporter.verdicts,
    }


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "concurrent":
        print(json.dumps(concurrent(int(sys.argv[2]))))
    else:
        print(json.dumps(state(*map(int, sys.argv[2:5]))))
