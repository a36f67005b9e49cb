"""Benchmark: what ``McpHealthSpanProcessor`` costs per span, against a bare exporting pipeline.

Run ``python benchmarks/bench_processor.py``. In one process it records real SDK spans once
(through a ``TracerProvider``), then replays the finished spans into two pipelines:

* baseline: ``SimpleSpanProcessor(NoOpExporter())``;
* ours: ``McpHealthSpanProcessor(SimpleSpanProcessor(NoOpExporter()), meter_provider=...)`` with a
  real SDK ``MeterProvider`` (the verdict metrics are part of the cost).

Two workloads: non-MCP spans (an HTTP server span with ordinary attributes) and MCP spans (short
sessions as the instrumentation records them: handshake, two ``tools/list`` pages, three
``tools/call`` spans, ``session.end``). It prints the median µs per span ``on_end`` and the ratio,
plus the full span lifecycle (start + attributes + end) for scale, and writes
``benchmarks/results/processor.md``. Benchmarks report; they do not gate.
"""

from __future__ import annotations

import datetime
import pathlib
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind

from otel_mcp_health import attributes as A
from otel_mcp_health._spans import INSTRUMENTATION_SCOPE
from otel_mcp_health.processor import McpHealthSpanProcessor

SESSIONS = 400  # each MCP session ends with its session.end span, so a replay starts afresh
REPEATS = 9
RESULTS = pathlib.Path(__file__).parent / "results" / "processor.md"


class NoOpExporter(SpanExporter):
    """Accepts every batch and does nothing."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class Collect(SpanProcessor):
    """Keeps every finished span."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def _record(emit: Callable[[TracerProvider], None]) -> list[ReadableSpan]:
    collect = Collect()
    provider = TracerProvider()
    provider.add_span_processor(collect)
    emit(provider)
    return collect.spans


def non_mcp(provider: TracerProvider) -> None:
    tracer = provider.get_tracer("bench.http")
    for n in range(SESSIONS * 7):
        span = tracer.start_span(
            "GET /orders/{id}",
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": "GET",
                "http.route": "/orders/{id}",
                "http.response.status_code": 200,
                "url.scheme": "https",
                "server.address": "api.example.test",
                "server.port": 443,
                "user_agent.original": f"bench/{n % 7}",
            },
        )
        span.end()


def mcp(provider: TracerProvider) -> None:
    tracer = provider.get_tracer(INSTRUMENTATION_SCOPE)
    for n in range(SESSIONS):
        base = {
            A.SESSION_KEY: f"{n:016x}",
            A.NETWORK_TRANSPORT: "tcp",
            A.SERVER_ADDRESS: "tools.example.test",
            A.SERVER_PORT: 443,
            A.MCP_PROTOCOL_VERSION: "2025-11-25",
        }

        def emit(
            name: str,
            attrs: dict[str, object],
            kind: SpanKind = SpanKind.CLIENT,
            base: dict[str, object] = base,
        ) -> None:
            tracer.start_span(name, kind=kind, attributes={**base, **attrs}).end()

        emit(
            "initialize",
            {
                A.MCP_METHOD_NAME: "initialize",
                A.SESSION_ERA: "initialize",
                A.SESSION_CAPABILITY_TOOLS: True,
                A.SESSION_CAPABILITY_TOOLS_LIST_CHANGED: True,
                A.TRANSPORT_OUTCOME: "ok",
                A.HTTP_RESPONSE_STATUS_CODE: 200,
            },
        )
        page = {A.MCP_METHOD_NAME: "tools/list", A.EVIDENCE_ORIGIN: "application"}
        emit("tools/list", {**page, A.CATALOG_PAGE_INDEX: 0, A.CATALOG_PAGE_NEXT_CURSOR_HASH: "h1"})
        emit(
            "tools/list",
            {
                **page,
                A.CATALOG_PAGE_INDEX: 1,
                A.CATALOG_PAGE_CURSOR_HASH: "h1",
                A.CATALOG_DIGEST: "sha256:" + "a" * 64,
            },
        )
        for tool, is_error in (("create_ticket", False), ("lookup", False), ("fail", True)):
            emit(
                f"tools/call {tool}",
                {
                    A.MCP_METHOD_NAME: "tools/call",
                    A.GEN_AI_TOOL_NAME: tool,
                    A.TRANSPORT_OUTCOME: "ok",
                    A.TRANSPORT_REQUEST_WRITTEN: True,
                    A.HTTP_RESPONSE_STATUS_CODE: 200,
                    A.CALL_IS_ERROR: is_error,
                    A.CALL_CONTRACT: "ok",
                    A.CALL_IDLE_WINDOW_S: 30.0,
                },
            )
        emit(A.SESSION_END_SPAN_NAME, {}, SpanKind.INTERNAL)


def _ours() -> SpanProcessor:
    meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return McpHealthSpanProcessor(SimpleSpanProcessor(NoOpExporter()), meter_provider=meters)


def _per_span_us(factory: Callable[[], SpanProcessor], spans: Sequence[ReadableSpan]) -> float:
    runs = []
    for _ in range(REPEATS):
        processor = factory()
        for span in spans:  # warm-up: lazily created metric storage, caches (sessions end)
            processor.on_end(span)
        start = time.perf_counter_ns()
        for span in spans:
            processor.on_end(span)
        runs.append((time.perf_counter_ns() - start) / len(spans) / 1000)
    return statistics.median(runs)


def _by_kind_us(spans: Sequence[ReadableSpan]) -> dict[str, float]:
    """Median µs of our ``on_end`` per MCP span kind (method name), warm."""
    samples: dict[str, list[float]] = {}
    processor = _ours()
    for span in spans:
        processor.on_end(span)
    for _ in range(REPEATS):
        for span in spans:
            start = time.perf_counter_ns()
            processor.on_end(span)
            kind = span.name.split(" ")[0]
            samples.setdefault(kind, []).append((time.perf_counter_ns() - start) / 1000)
    return {kind: statistics.median(values) for kind, values in samples.items()}


def _lifecycle_us(emit: Callable[[TracerProvider], None], count: int) -> float:
    runs = []
    for _ in range(REPEATS):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(NoOpExporter()))
        start = time.perf_counter_ns()
        emit(provider)
        runs.append((time.perf_counter_ns() - start) / count / 1000)
    return statistics.median(runs)


def main() -> None:
    rows = []
    for label, emit in (("non-MCP span", non_mcp), ("MCP span", mcp)):
        spans = _record(emit)
        baseline = _per_span_us(lambda: SimpleSpanProcessor(NoOpExporter()), spans)
        ours = _per_span_us(_ours, spans)
        lifecycle = _lifecycle_us(emit, len(spans))
        rows.append((label, len(spans), baseline, ours, lifecycle))
    lines = [
        f"# Span processor benchmark ({datetime.date.today().isoformat()})",
        "",
        f"- python {platform.python_version()} on {platform.machine()}; "
        f"{SESSIONS} MCP sessions (7 spans each) and {SESSIONS * 7} non-MCP spans, "
        f"median of {REPEATS} runs in one process",
        "- `on_end` cost per span after one warm-up pass; baseline = "
        "`SimpleSpanProcessor(NoOpExporter())`; ours wraps the same baseline and records the "
        "verdict metrics into a real SDK MeterProvider",
        "- lifecycle = start + attributes + end through a TracerProvider with the baseline only, "
        "for scale",
        "",
        "| spans | n | baseline on_end µs | ours on_end µs | added µs | ratio | lifecycle µs |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, count, baseline, ours, lifecycle in rows:
        lines.append(
            f"| {label} | {count} | {baseline:.2f} | {ours:.2f} | {ours - baseline:.2f} | "
            f"{ours / baseline:.2f}x | {lifecycle:.2f} |"
        )
    lines += ["", "Our `on_end` per MCP span kind (median µs, warm):", ""]
    lines += [f"- `{kind}`: {us:.1f}" for kind, us in _by_kind_us(_record(mcp)).items()]
    lines += ["", "Benchmarks report; they do not gate."]
    text = "\n".join(lines) + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
