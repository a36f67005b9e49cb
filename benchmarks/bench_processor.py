"""Benchmark: what ``McpHealthSpanProcessor`` costs per span, against a bare exporting pipeline.

Run ``python benchmarks/bench_processor.py`` (``make bench`` runs it). It records real spans once,
then replays the finished spans into two pipelines, alternating them round after round:

* baseline: ``SimpleSpanProcessor(NoOpExporter())``;
* ours: ``McpHealthSpanProcessor(SimpleSpanProcessor(NoOpExporter()), meter_provider=...)`` with a
  real SDK ``MeterProvider`` (the verdict metrics are part of the cost).

Two workloads: non-MCP spans (an HTTP server span with ordinary attributes) and MCP spans recorded
by ``McpHealthInstrumentor`` from real in-process sessions (``mcp.Client(..., mode="legacy")``
against ``_server.py``: handshake, ``tools/list``, three ``tools/call``, close), so the workload
follows whatever evidence the instrumentation writes. Only public API. It reports the median µs
per ``on_end`` (with the range over rounds), the added µs and the ratio, our ``on_end`` per MCP
span kind, where a ``tools/call`` span's ``on_end`` goes (a cProfile breakdown by component, with
the Python calls per span), and what a non-MCP span's whole lifecycle (``on_start`` included)
costs with and without us. Results:
``benchmarks/.results/processor.md``; docs/performance.md reads them.
"""

from __future__ import annotations

import cProfile
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import anyio
from mcp import Client
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind

from _common import NoOpExporter, Report, median, ratio, spread
from _server import build_server
from otel_mcp_health import McpHealthInstrumentor, McpHealthSpanProcessor

SESSIONS = 400
ROUNDS = 9
#: Where a ``tools/call`` span's ``on_end`` goes: a component and the function (file suffix,
#: name) whose cumulative time it is. The rest is the routing shell itself.
COMPONENTS = (
    ("attributes read in place", "_sdkspan.py", "attributes"),
    ("call decoding (memoized on raw values)", "_memo.py", "decoded"),
    ("server identity (memoized on raw values)", "_memo.py", "server"),
    ("session facts + judgement memo lookup", "_engine.py", "_classify_call"),
    ("metrics (kept counter cells)", "_engine.py", "_count_call"),
    ("incidents", "_engine.py", "_open_incident"),
    ("the exported copy", "_verdicts.py", "enriched_copy"),
    ("downstream SimpleSpanProcessor (the baseline's own work)", "export/__init__.py", "on_end"),
)


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


def non_mcp_client(provider: TracerProvider) -> None:
    """Outbound HTTP client spans: the kind a borrowed MCP span has, so the processor looks for
    our session key on them (spans are recognised by their evidence)."""
    tracer = provider.get_tracer("bench.httpclient")
    for n in range(SESSIONS * 7):
        span = tracer.start_span(
            "GET",
            kind=SpanKind.CLIENT,
            attributes={
                "http.request.method": "GET",
                "http.response.status_code": 200,
                "url.full": f"https://api.example.test/orders/{n % 7}",
                "server.address": "api.example.test",
                "server.port": 443,
            },
        )
        span.end()


async def _sessions() -> None:
    for _ in range(SESSIONS // 10):  # ten at a time, as an agent fleet would
        async with anyio.create_task_group() as group:
            for _ in range(10):
                group.start_soon(_session)


async def _session() -> None:
    async with Client(build_server(), mode="legacy") as client:
        await client.list_tools()
        for _ in range(3):
            await client.call_tool("lookup", {"query": "otel"})


def mcp(provider: TracerProvider) -> None:
    """Real sessions through our instrumentation; only our spans reach ``provider``."""
    instrumentor = McpHealthInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        anyio.run(_sessions)
    finally:
        instrumentor.uninstrument()


def _ours() -> SpanProcessor:
    meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return McpHealthSpanProcessor(SimpleSpanProcessor(NoOpExporter()), meter_provider=meters)


def _baseline() -> SpanProcessor:
    return SimpleSpanProcessor(NoOpExporter())


def _per_span_us(processor: SpanProcessor, spans: Sequence[ReadableSpan]) -> float:
    for span in spans:  # warm-up: lazily created metric storage, caches
        processor.on_end(span)
    start = time.process_time_ns()
    for span in spans:
        processor.on_end(span)
    return (time.process_time_ns() - start) / len(spans) / 1000


def _by_kind_us(spans: Sequence[ReadableSpan]) -> dict[str, list[float]]:
    """Our ``on_end`` µs per MCP span kind (the span name's first word), warm."""
    samples: dict[str, list[float]] = {}
    processor = _ours()
    for span in spans:
        processor.on_end(span)
    for _ in range(3):
        for span in spans:
            start = time.perf_counter_ns()
            processor.on_end(span)
            kind = span.name.split(" ")[0]
            samples.setdefault(kind, []).append((time.perf_counter_ns() - start) / 1000)
    return samples


def _profile(spans: Sequence[ReadableSpan]) -> tuple[float, list[tuple[str, float]]]:
    """Python calls per ``tools/call`` ``on_end`` and each component's share of it (cProfile,
    warm, in the order the spans were recorded; profiling inflates small calls alike)."""
    processor = _ours()
    for span in spans:
        processor.on_end(span)
    profile = cProfile.Profile()
    calls = 0
    for span in spans:
        if span.name.startswith("tools/call"):
            profile.enable()
            processor.on_end(span)
            profile.disable()
            calls += 1
        else:
            processor.on_end(span)
    stats = pstats.Stats(profile)
    cumulative = {(file, name): row[3] for (file, _, name), row in stats.stats.items()}  # type: ignore[attr-defined]
    total = sum(
        t
        for (file, name), t in cumulative.items()
        if file.endswith("processor.py") and name == "on_end"
    )
    shares = [
        (
            label,
            sum(
                t
                for (file, name), t in cumulative.items()
                if file.endswith(suffix) and name == function
            )
            / total,
        )
        for label, suffix, function in COMPONENTS
    ]
    return stats.total_calls / calls, shares  # type: ignore[attr-defined]


def _lifecycle_us(
    spans: int, processor: SpanProcessor | None = None, client: bool = False
) -> float:
    """CPU µs per non-MCP span's whole lifecycle (start, attributes, end) through a provider
    (``on_start`` included: it tracks CLIENT spans that our instrumentation may enrich)."""
    provider = TracerProvider()
    provider.add_span_processor(processor or _baseline())
    emit = non_mcp_client if client else non_mcp
    emit(provider)  # warm-up
    start = time.process_time_ns()
    emit(provider)
    return (time.process_time_ns() - start) / spans / 1000


def _lifecycle_rows(spans: int) -> list[list[str]]:
    """Baseline and ours for a whole non-MCP span lifecycle, alternating round after round."""
    rows = []
    for label, client in (("non-MCP span", False), ("non-MCP CLIENT span", True)):
        base: list[float] = []
        ours: list[float] = []
        for _ in range(ROUNDS):
            base.append(_lifecycle_us(spans, _baseline(), client))
            ours.append(_lifecycle_us(spans, _ours(), client))
        added = [o - b for o, b in zip(ours, base, strict=True)]
        rows.append([label, spread(base, 2), spread(ours, 2), spread(added, 2)])
    return rows


def _workload_rows(workloads: dict[str, list[ReadableSpan]]) -> tuple[list[list[str]], float]:
    """Table rows per workload, alternating baseline and ours; and the µs added per non-MCP span."""
    rows = []
    added_non_mcp = 0.0
    for label, spans in workloads.items():
        base: list[float] = []
        ours: list[float] = []
        for _ in range(ROUNDS):
            base.append(_per_span_us(_baseline(), spans))
            ours.append(_per_span_us(_ours(), spans))
        added = [o - b for o, b in zip(ours, base, strict=True)]
        cells = [spread(base, 2), spread(ours, 2), spread(added, 2), ratio(ours, base)]
        rows.append([label, str(len(spans)), *cells])
        if label == "non-MCP span":
            added_non_mcp = median(added)
    return rows, added_non_mcp


def main() -> None:
    report = Report("Span processor benchmark", "processor")
    workloads = {
        "non-MCP span": _record(non_mcp),
        "non-MCP CLIENT span": _record(non_mcp_client),
        "MCP span": _record(mcp),
    }
    report.add(
        f"- {ROUNDS} rounds alternating baseline and ours; process CPU time of `on_end` per span "
        "after a warm-up pass; medians with (min-max) over rounds, ratios per round",
        "- baseline: `SimpleSpanProcessor(NoOpExporter())`; ours wraps the same baseline and "
        "records the verdict metrics into a real SDK MeterProvider",
        f"- MCP spans: {SESSIONS} real in-process sessions recorded by `McpHealthInstrumentor` "
        "(handshake, `tools/list`, 3 `tools/call`, close); non-MCP spans: HTTP server spans; "
        "non-MCP CLIENT spans: outbound HTTP client spans",
    )
    rows, added = _workload_rows(workloads)
    header = ("spans", "n", "baseline on_end µs", "ours on_end µs", "added µs", "ratio")
    report.table(header, rows)
    report.add("Our `on_end` per MCP span kind (µs, median (p10-p90) over every span, warm):", "")
    by_kind = _by_kind_us(workloads["MCP span"])
    for kind, values in by_kind.items():
        deciles = statistics.quantiles(values, n=10)
        report.add(
            f"- `{kind}`: {median(values):.1f} ({deciles[0]:.1f}-{deciles[-1]:.1f}) "
            f"over {len(values)} spans"
        )
    call_us = median(by_kind["tools/call"])
    report.add(
        "",
        f"Against the targets: a `tools/call` span {call_us:.1f} µs "
        f"({'meets' if call_us <= 15 else 'misses'} <= 15 µs); added per non-MCP span "
        f"{added:.2f} µs ({'meets' if added <= 0.5 else 'misses'} <= 0.5 µs)",
    )
    python_calls, shares = _profile(workloads["MCP span"])
    report.add(
        "",
        f"Where a `tools/call` span's `on_end` goes (cProfile, warm; {python_calls:.0f} Python "
        "calls per span; µs = share × the median above):",
    )
    rows = [[label, f"{share:.0%}", f"{share * call_us:.1f}"] for label, share in shares]
    rest = 1 - sum(share for _, share in shares)
    rows.append(
        ["routing shell, session lookup, lock (the rest)", f"{rest:.0%}", f"{rest * call_us:.1f}"]
    )
    report.table(("component", "share", "µs"), rows)
    report.add(
        "",
        "A non-MCP span's whole lifecycle (start with 5-7 attributes, end) through a "
        f"TracerProvider, CPU µs per span, {ROUNDS} alternating rounds "
        "(`on_start` included: it tracks CLIENT spans that our instrumentation may enrich):",
    )
    report.table(
        ("spans", "baseline µs", "ours µs", "added µs"),
        _lifecycle_rows(len(workloads["non-MCP span"])),
    )
    report.write()


if __name__ == "__main__":
    main()
    sys.exit(0)
