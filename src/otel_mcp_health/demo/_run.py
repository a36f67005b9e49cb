"""The demo's scenarios, and the table of verdicts they leave on the exported spans.

Everything here is the real thing: the SDK's ``mcp.Client``, instrumented by
:class:`~otel_mcp_health.McpHealthInstrumentor`, talks to the demo's real MCP server
(:mod:`._server`) over three transports, and every span goes through
:class:`~otel_mcp_health.McpHealthSpanProcessor` into an in-memory exporter. The table is read
back from the *exported* spans: what is printed is exactly what a tracing backend would receive.

How a scenario is told apart from the next: each session runs under a root span and each
scenario under a child span of its own (name ``demo <label>``, attribute
:data:`SCENARIO_ATTRIBUTE`); the MCP spans a scenario produces are its descendants, and a span that
is not (e.g. a notification handled by the session's receive loop) is attributed to its session
through its trace. An outcome verifier's receipt ends its ``tools/call`` span from a worker
thread, so after each scenario the demo waits, with a deadline, for the receipts
(:func:`~otel_mcp_health.instrumentation.flush_receipts`).

With ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) set, the same
processor also feeds a ``BatchSpanProcessor(OTLPSpanExporter())`` (OTLP/HTTP, configured by the
standard ``OTEL_EXPORTER_OTLP_*`` variables), so the spans with their verdicts reach a collector
as well; it is flushed when the demo ends (bounded by the exporter's own timeout).
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

import otel_mcp_health
from otel_mcp_health import attributes as A
from otel_mcp_health.core.calls import Rates
from otel_mcp_health.core.vocabulary import OUTCOME_NOT_REQUIRED
from otel_mcp_health.demo._server import build_server, serve_http
from otel_mcp_health.instrumentation import (
    McpHealthInstrumentor,
    flush_receipts,
    report_reconciliation,
)
from otel_mcp_health.processor import McpHealthSpanProcessor
from otel_mcp_health.verifiers import (
    file_digest,
    outcome_not_required,
    register_verifier,
    unregister_verifier,
)

EXIT_OK: Final = 0
EXIT_MISMATCH: Final = 1
EXIT_SETUP_ERROR: Final = 2

#: Put in every argument value the demo sends. The servers echo arguments in their results and
#: error messages; the test suite checks that this value never reaches the printed output.
CANARY: Final = "demo-canary-4e1f7b"
#: Label attribute of the demo's own spans: demo bookkeeping, not product telemetry (not an MCP
#: span, so the processor forwards it untouched; the product's names live in ``attributes``).
SCENARIO_ATTRIBUTE: Final = "demo.scenario"
#: The read timeout of the ``publish_slow`` call (the server sleeps far longer).
SLOW_CALL_TIMEOUT_S: Final = 0.3
#: Upper bound of one scenario, and of the wait for its outcome receipts.
STEP_TIMEOUT_S: Final = 10.0
RECEIPT_WAIT_S: Final = 5.0
#: Upper bound of one session (its scenarios, plus opening and closing it).
SESSION_TIMEOUT_S: Final = 30.0
#: Tools whose outcome the demo can check: the promised file must hold the promised bytes.
VERIFIED_TOOLS: Final = ("export_report", "export_report_broken", "publish_slow")
NOT_REQUIRED_TOOLS: Final = ("search",)


@dataclass(frozen=True, slots=True)
class Scenario:
    """One labelled step and the verdicts its spans must carry: ``(span name, verdict)``."""

    label: str
    expected: tuple[tuple[str, str], ...]


def _call(tool: str, verdict: str) -> tuple[str, str]:
    return (f"tools/call {tool}", verdict)


# The demo's contract with itself, in running order. A scenario's spans are compared with its
# expectations as a multiset (two spans of one scenario may end in either order).
HTTP_CATALOG = Scenario("http: list 2 pages, export_report", (_call("export_report", "healthy"),))
HTTP_BROKEN = Scenario(
    "http: export_report_broken", (_call("export_report_broken", "false_success"),)
)
HTTP_TICKET = Scenario("http: create_ticket (isError)", (_call("create_ticket", "tool_failed"),))
HTTP_WRONG_ARGS = Scenario(
    "http: search, query of wrong type", (_call("search", "protocol_error"),)
)
HTTP_POLICY = Scenario("http: search (not_required)", (_call("search", "healthy"),))
HTTP_NO_VERIFIER = Scenario(
    "http: notify_team (no verifier)", (_call("notify_team", "unverified"),)
)
HTTP_UNKNOWN_TOOL = Scenario(
    "http: unknown tool export_reports", (_call("export_reports", "stale_catalog"),)
)
HTTP_AUTHN = Scenario(
    "http: /authn answers 401",
    (("server/discover", "needs_auth"), ("initialize", "needs_auth")),
)
HTTP_CLOSED = Scenario("http: closed port", (("server/discover", "transport_error"),))
# The silent call and its reconciliation run in-process: over HTTP, a call that timed out never
# saw its HTTP status, so its authorization layer stays unobserved and, even once the effect is
# confirmed and its receipt passes, the reconciled call is at best ``unverified``.
INPROC_TIMEOUT = Scenario(
    "in-process: list, publish_slow times out", (_call("publish_slow", "effect_unknown"),)
)
INPROC_RECONCILED = Scenario(
    "in-process: reconcile publish_slow", ((A.RECONCILE_SPAN_NAME, "healthy"),)
)
INPROC_ANNOUNCE = Scenario(
    "in-process: announce_change", (_call("announce_change", "stale_catalog"),)
)
INPROC_STALE = Scenario("in-process: search, no re-list", (_call("search", "stale_catalog"),))
INPROC_RELIST = Scenario("in-process: re-list, search", (_call("search", "healthy"),))
STDIO_EXPORT = Scenario("stdio: list 2 pages, export_report", (_call("export_report", "healthy"),))
SCENARIOS: Final = (
    HTTP_CATALOG,
    HTTP_BROKEN,
    HTTP_TICKET,
    HTTP_WRONG_ARGS,
    HTTP_POLICY,
    HTTP_NO_VERIFIER,
    HTTP_UNKNOWN_TOOL,
    HTTP_AUTHN,
    HTTP_CLOSED,
    INPROC_TIMEOUT,
    INPROC_RECONCILED,
    INPROC_ANNOUNCE,
    INPROC_STALE,
    INPROC_RELIST,
    STDIO_EXPORT,
)

#: Printed under the table; every line fits in 100 columns (tests/test_readme.py checks it).
LEGEND: Final = "\n".join(
    (
        "legend: verdict = the session contract's verdict on the exported span (docs/model.md)",
        "        first failed = first failing layer, in the order transport > authorization >",
        "        protocol > execution > outcome; protocol-level success counts result envelopes",
        "        (isError included); verified outcomes counts passing verifier receipts (the",
        "        not_required policy is not a receipt)",
    )
)


@dataclass(frozen=True, slots=True)
class Row:
    """One exported MCP span and its verdict (session contract, or catalog for catalog rows)."""

    scenario: str
    span: str
    verdict: str
    first_failed: str
    next_action: str
    reason: str


@dataclass
class _Pipeline:
    """TracerProvider → McpHealthSpanProcessor → in-memory exporter (+ OTLP when configured)."""

    provider: TracerProvider
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    meters: MeterProvider
    otlp: bool

    @classmethod
    def build(cls) -> _Pipeline:
        exporter = InMemorySpanExporter()
        downstream: list[SpanProcessor] = [SimpleSpanProcessor(exporter)]
        otlp = bool(
            os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
            or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        )
        if otlp:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            downstream.append(BatchSpanProcessor(OTLPSpanExporter()))
        reader = InMemoryMetricReader()
        meters = MeterProvider(metric_readers=[reader])
        provider = TracerProvider()
        provider.add_span_processor(McpHealthSpanProcessor(downstream, meter_provider=meters))
        return cls(provider, exporter, reader, meters, otlp)

    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def shutdown(self) -> None:
        self.provider.shutdown()
        self.meters.shutdown()


@dataclass
class _Demo:
    """Runs each scenario under a span of its own, so its MCP spans can be told apart."""

    tracer: Tracer
    pipeline: _Pipeline
    workdir: Path
    errors: dict[str, str] = field(default_factory=dict)
    _files: int = 0

    def file_arguments(self) -> dict[str, Any]:
        """Arguments of a file-writing tool: a fresh path in the demo's temporary directory."""
        self._files += 1
        path = self.workdir / f"report-{self._files}.txt"
        return {"path": str(path), "content": f"quarterly numbers {CANARY}"}

    @contextmanager
    def session(self, label: str) -> Iterator[None]:
        """A root span around one MCP session, so its stray spans share a trace."""
        with self.tracer.start_as_current_span(
            f"demo {label}", attributes={SCENARIO_ATTRIBUTE: label}
        ):
            yield

    async def step(self, scenario: Scenario, body: Callable[[], Awaitable[object]]) -> None:
        """Run ``body`` under the scenario's span, then wait for its outcome receipts.

        ``body`` may raise when the failure is the point (a timeout, a refused handshake): the
        application sees its usual exceptions, unchanged, and the verdicts on the spans are what
        the demo checks. The exception is not printed: its message can echo arguments.
        """
        with self.tracer.start_as_current_span(
            f"demo {scenario.label}", attributes={SCENARIO_ATTRIBUTE: scenario.label}
        ):
            with suppress(Exception), anyio.fail_after(STEP_TIMEOUT_S):
                await body()
            # Receipts end their spans from the verifiers' worker threads: wait (bounded).
            await anyio.to_thread.run_sync(flush_receipts, RECEIPT_WAIT_S)

    async def guarded(self, label: str, session: Callable[[], Awaitable[None]]) -> None:
        """Run one session's scenarios; a session that cannot even start is recorded."""
        with self.session(label):
            try:
                with anyio.fail_after(SESSION_TIMEOUT_S):
                    await session()
            except Exception as exc:
                self.errors[label] = type(exc).__name__


async def _list_all(client: Client) -> None:
    first = await client.list_tools()
    await client.list_tools(cursor=first.next_cursor)


class _ListChanged:
    """A ``message_handler`` that notices ``notifications/tools/list_changed``."""

    def __init__(self) -> None:
        self.arrived = anyio.Event()

    async def __call__(self, message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.arrived.set()


async def _http_sessions(demo: _Demo) -> None:
    async with serve_http(build_server()) as base:
        async with Client(f"{base}/mcp") as client:

            async def catalog_then_export() -> None:
                await _list_all(client)
                await client.call_tool("export_report", demo.file_arguments())

            await demo.step(HTTP_CATALOG, catalog_then_export)
            await demo.step(
                HTTP_BROKEN,
                lambda: client.call_tool("export_report_broken", demo.file_arguments()),
            )
            await demo.step(
                HTTP_TICKET, lambda: client.call_tool("create_ticket", {"title": CANARY})
            )
            await demo.step(
                HTTP_WRONG_ARGS, lambda: client.call_tool("search", {"query": {"text": CANARY}})
            )
            await demo.step(HTTP_POLICY, lambda: client.call_tool("search", {"query": CANARY}))
            await demo.step(
                HTTP_NO_VERIFIER, lambda: client.call_tool("notify_team", {"message": CANARY})
            )
            await demo.step(
                HTTP_UNKNOWN_TOOL, lambda: client.call_tool("export_reports", {"path": CANARY})
            )

        async def handshake(url: str) -> None:
            async with Client(url):
                pass

        await demo.step(HTTP_AUTHN, lambda: handshake(f"{base}/authn"))
    with _closed_port() as port:
        await demo.step(HTTP_CLOSED, lambda: handshake(f"http://127.0.0.1:{port}/mcp"))


@contextmanager
def _closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections: bound (nobody else gets it), not listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        yield port


async def _in_process_session(demo: _Demo) -> None:
    # The legacy (``initialize``) era: the server pushes list_changed without a subscription.
    list_changed = _ListChanged()
    async with Client(build_server(), mode="legacy", message_handler=list_changed) as client:
        slow = demo.file_arguments()

        async def catalog_then_silence() -> None:
            await _list_all(client)
            await client.call_tool("publish_slow", slow, read_timeout_seconds=SLOW_CALL_TIMEOUT_S)

        await demo.step(INPROC_TIMEOUT, catalog_then_silence)

        async def reconcile() -> None:
            # The destination query an operator would run: the file is there (the tool wrote
            # it before going silent). The verifier then checks it holds the promised bytes.
            committed = await anyio.Path(slow["path"]).is_file()
            report_reconciliation(client, "publish_slow", committed=committed, arguments=slow)

        await demo.step(INPROC_RECONCILED, reconcile)

        async def announce() -> None:
            await client.call_tool("announce_change", {})
            await list_changed.arrived.wait()

        await demo.step(INPROC_ANNOUNCE, announce)
        await demo.step(INPROC_STALE, lambda: client.call_tool("search", {"query": CANARY}))

        async def relist_then_search() -> None:
            await _list_all(client)
            await client.call_tool("search", {"query": CANARY})

        await demo.step(INPROC_RELIST, relist_then_search)


def _stdio_params() -> StdioServerParameters:
    # The child gets the SDK's minimal environment; PYTHONPATH makes this package importable
    # whether it is installed or run from a source tree.
    package_root = str(Path(otel_mcp_health.__file__).resolve().parents[1])
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "otel_mcp_health.demo._server", "--stdio"],
        env={"PYTHONPATH": package_root},
    )


async def _stdio_session(demo: _Demo) -> None:
    async with Client(_stdio_params()) as client:

        async def catalog_then_export() -> None:
            await _list_all(client)
            await client.call_tool("export_report", demo.file_arguments())

        await demo.step(STDIO_EXPORT, catalog_then_export)


def _sha256_of_content(call: otel_mcp_health.CallContext) -> str:
    return hashlib.sha256(str(call.arguments["content"]).encode("utf-8")).hexdigest()


@contextmanager
def _policies() -> Iterator[None]:
    """Register the demo's outcome verifiers and policy; forget them afterwards."""
    verifier = file_digest(
        path=lambda call: str(call.arguments["path"]), expected_sha256=_sha256_of_content
    )
    for tool in VERIFIED_TOOLS:
        register_verifier(tool, verifier, timeout=2.0)
    for tool in NOT_REQUIRED_TOOLS:
        outcome_not_required(tool)
    try:
        yield
    finally:
        for tool in (*VERIFIED_TOOLS, *NOT_REQUIRED_TOOLS):
            unregister_verifier(tool)


def _label_of(
    span: ReadableSpan, by_id: Mapping[int, ReadableSpan], steps: Sequence[ReadableSpan]
) -> str:
    """The scenario of ``span``: its nearest demo ancestor, else the step running when it began.

    A notification is handled by the session's receive loop, outside any step's context; the step
    whose time span holds its arrival is the one that caused it (steps run one after the other).
    """
    current = by_id.get(span.parent.span_id) if span.parent else None
    while current is not None:
        label = (current.attributes or {}).get(SCENARIO_ATTRIBUTE)
        if isinstance(label, str):
            return label
        current = by_id.get(current.parent.span_id) if current.parent else None
    started = span.start_time or 0
    for step in steps:
        same_trace = step.context.trace_id == span.context.trace_id
        if same_trace and (step.start_time or 0) <= started <= (step.end_time or 0):
            return str((step.attributes or {})[SCENARIO_ATTRIBUTE])
    return next(
        (
            str((s.attributes or {})[SCENARIO_ATTRIBUTE])
            for s in steps
            if s.parent is None and s.context.trace_id == span.context.trace_id
        ),
        "-",
    )


def _collect(spans: Sequence[ReadableSpan]) -> tuple[list[Row], list[Row]]:
    """The verdict rows and the catalog rows, in export order."""
    by_id = {s.context.span_id: s for s in spans}
    # Scenario steps first (they have a parent), then the session spans around them.
    labelled = [s for s in spans if SCENARIO_ATTRIBUTE in (s.attributes or {})]
    steps = sorted(labelled, key=lambda s: s.parent is None)
    verdicts: list[Row] = []
    catalogs: list[Row] = []
    for span in spans:
        attrs = span.attributes or {}
        label = _label_of(span, by_id, steps)
        if A.VERDICT in attrs:
            verdicts.append(
                Row(
                    scenario=label,
                    span=span.name,
                    verdict=str(attrs[A.VERDICT]),
                    first_failed=str(attrs.get(A.CALL_FIRST_FAILED_LAYER, "-")),
                    next_action=str(attrs.get(A.NEXT_ACTION, "-")),
                    reason=str(attrs.get(A.REASON, "-")),
                )
            )
        elif A.CATALOG_VERDICT in attrs:
            catalogs.append(
                Row(
                    scenario=label,
                    span=span.name,
                    verdict=str(attrs[A.CATALOG_VERDICT]),
                    first_failed="-",
                    next_action="-",
                    reason=str(attrs.get(A.CATALOG_REASON, "-")),
                )
            )
    return verdicts, catalogs


def _rates(spans: Sequence[ReadableSpan]) -> Rates:
    """Seed 003's two rates over the exported ``tools/call`` spans, from their layer statuses."""
    calls = envelopes = verified = 0
    for span in spans:
        attrs = span.attributes or {}
        if attrs.get(A.MCP_METHOD_NAME) != "tools/call" or A.VERDICT not in attrs:
            continue
        calls += 1
        envelopes += attrs.get(A.layer_attribute("protocol")) == "passed"
        verified += (
            attrs.get(A.layer_attribute("outcome")) == "passed"
            and attrs.get(A.OUTCOME_METHOD) != OUTCOME_NOT_REQUIRED
        )
    return Rates(calls=calls, envelopes=envelopes, verified=verified)


def _incidents(reader: InMemoryMetricReader) -> Counter[str]:
    """Incidents opened, by verdict, from the processor's ``mcp_health.incidents`` counter."""
    opened: Counter[str] = Counter()
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != A.METRIC_INCIDENTS:
                    continue
                for point in metric.data.data_points:
                    if isinstance(point, NumberDataPoint):
                        opened[str((point.attributes or {}).get(A.VERDICT))] += int(point.value)
    return opened


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(line[i]) for line in (header, *rows)) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in (header, *rows)
    ]
    return "\n".join(lines) + "\n"


def _wrapped(head: str, items: Sequence[str], width: int = 100) -> str:
    """``head`` then the items two spaces apart, continued under the first item within ``width``."""
    lines, line = [], head
    for item in items:
        if line.strip() and len(line) + 2 + len(item) > width and line != head:
            lines.append(line)
            line = " " * len(head)
        line += item if line.endswith(" ") else "  " + item
    return "\n".join([*lines, line])


def _percent(part: int, whole: int) -> str:
    return f"{part / whole * 100:.1f} % ({part}/{whole})" if whole else "n/a"


def _mismatches(rows: Sequence[Row], errors: Mapping[str, str]) -> list[str]:
    problems = [f"{label}: session failed ({error})" for label, error in errors.items()]
    for scenario in SCENARIOS:
        got = Counter((r.span, r.verdict) for r in rows if r.scenario == scenario.label)
        want = Counter(scenario.expected)
        if got != want:
            expected, actual = sorted(want.elements()), sorted(got.elements())
            problems.append(f"{scenario.label}: expected {expected}, got {actual}")
    return problems


def report(demo: _Demo, out: TextIO, elapsed_s: float) -> int:
    """Print the verdict table, the catalog verdicts, the two rates and the legend."""
    spans = demo.pipeline.spans()
    verdicts, catalogs = _collect(spans)
    expected = {s.label: {v for _, v in s.expected} for s in SCENARIOS}
    out.write(
        _table(
            ("scenario", "span", "verdict", "first failed", "next action", "reason", ""),
            [
                (
                    r.scenario,
                    r.span,
                    r.verdict,
                    r.first_failed,
                    r.next_action,
                    r.reason,
                    "" if r.verdict in expected.get(r.scenario, ()) else "<-- UNEXPECTED",
                )
                for r in verdicts
            ],
        )
    )
    out.write("\ncatalog verdicts, on the spans that end a traversal or bring a signal:\n")
    out.write(
        _table(
            ("scenario", "span", "catalog", "reason"),
            [(r.scenario, r.span, r.verdict, r.reason) for r in catalogs],
        )
    )
    rates = _rates(spans)
    out.write(
        f"\ncalls: {rates.calls}  protocol-level success: "
        f"{_percent(rates.envelopes, rates.calls)}  verified outcomes: "
        f"{_percent(rates.verified, rates.calls)}\n"
    )
    incidents = _incidents(demo.pipeline.reader)
    items = [f"{v} {n}" for v, n in sorted(incidents.items())] or ["none"]
    out.write(_wrapped("incidents opened: ", items) + "\n")
    out.write(LEGEND + "\n")
    problems = _mismatches(verdicts, demo.errors)
    if problems:
        out.write(
            f"\nDEMO MISMATCH: {len(problems)} scenario(s) did not get the expected verdict\n"
        )
        for problem in problems:
            out.write(f"  MISMATCH {problem}\n")
        return EXIT_MISMATCH
    out.write(
        f"\nall {len(SCENARIOS)} scenarios got their expected verdicts "
        f"({len(verdicts)} spans, {elapsed_s:.1f} s)\n"
    )
    return EXIT_OK


async def _scenarios(demo: _Demo) -> None:
    await demo.guarded("http session", lambda: _http_sessions(demo))
    await demo.guarded("in-process session", lambda: _in_process_session(demo))
    await demo.guarded("stdio session", lambda: _stdio_session(demo))


def run(out: TextIO, err: TextIO) -> int:
    """Run every scenario and print the report; returns the exit code (0, 1 or 2)."""
    started = time.monotonic()
    try:
        pipeline = _Pipeline.build()
    except Exception as exc:  # e.g. an invalid OTEL_EXPORTER_OTLP_* setting
        err.write(f"otel-mcp-health demo: cannot build the telemetry pipeline ({exc})\n")
        return EXIT_SETUP_ERROR
    instrumentor = McpHealthInstrumentor()
    instrumentor.instrument(tracer_provider=pipeline.provider, meter_provider=pipeline.meters)
    try:
        with _policies(), tempfile.TemporaryDirectory(prefix="otel-mcp-health-demo-") as workdir:
            demo = _Demo(pipeline.provider.get_tracer(__name__), pipeline, Path(workdir))
            out.write(
                f"otel-mcp-health demo: {len(SCENARIOS)} scenarios against real MCP servers "
                "(HTTP on 127.0.0.1, in-process, stdio)"
                + (", also exported via OTLP/HTTP" if pipeline.otlp else "")
                + "\n\n"
            )
            anyio.run(_scenarios, demo)
            return report(demo, out, time.monotonic() - started)
    finally:
        instrumentor.uninstrument()
        pipeline.shutdown()
