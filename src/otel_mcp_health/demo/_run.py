"""The demo's run: the telemetry pipeline, the outcome policies, the scenarios, the report.

Everything here is the real thing: the SDK's ``mcp.Client``, instrumented by
:class:`~otel_mcp_health.McpHealthInstrumentor`, talks to the demo's real MCP server
(:mod:`._server`) over three transports, and every span goes through
:class:`~otel_mcp_health.McpHealthSpanProcessor` into an in-memory exporter. The table is read
back from the *exported* spans: what is printed is exactly what a tracing backend would receive.

How a scenario is told apart from the next: each session runs under a root span and each
scenario under a child span of its own (name ``demo <label>``, attribute
:data:`._scenarios.SCENARIO_ATTRIBUTE`); the MCP spans a scenario produces are its descendants,
and a span that is not (e.g. a notification handled by the session's receive loop) is attributed
to its session through its trace. An outcome verifier's receipt ends its ``tools/call`` span
from a worker thread, so after each scenario the demo waits, with a deadline, for the receipts
(:func:`~otel_mcp_health.instrumentation.flush_receipts`).

With ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) set, the same
processor also feeds a ``BatchSpanProcessor(OTLPSpanExporter())`` (OTLP/HTTP, configured by the
standard ``OTEL_EXPORTER_OTLP_*`` variables), so the spans with their verdicts reach a collector
as well; with ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._METRICS_ENDPOINT``) the processor's and the
instrumentation's metrics go there too (a periodic OTLP/HTTP reader). Both are flushed when the
demo ends (bounded by the exporters' own timeouts).

The scenarios and their expected verdicts live in :mod:`._scenarios`, the sessions that run them
in :mod:`._drive`, the table and the check of the exported spans in :mod:`._verdict_table`.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final, TextIO

import anyio
from opentelemetry.sdk.metrics.export import (
    InMemoryMetricReader,
    MetricReader,
    PeriodicExportingMetricReader,
)

import otel_mcp_health
from otel_mcp_health.clientside.pipeline import Pipeline, build, instrumented
from otel_mcp_health.demo._drive import Demo, drive
from otel_mcp_health.demo._scenarios import CANARY, HTTP_CLOSED, SCENARIOS
from otel_mcp_health.demo._verdict_table import EXIT_MISMATCH, EXIT_OK, report
from otel_mcp_health.verifiers import (
    file_digest,
    outcome_not_required,
    register_verifier,
    unregister_verifier,
)

#: The demo's entry point re-exports what its tests and the pipeline tests read from it.
__all__ = [
    "CANARY",
    "EXIT_MISMATCH",
    "EXIT_OK",
    "EXIT_SETUP_ERROR",
    "HTTP_CLOSED",
    "SCENARIOS",
    "run",
]

EXIT_SETUP_ERROR: Final = 2
#: Tools whose outcome the demo can check: the promised file must hold the promised bytes.
VERIFIED_TOOLS: Final = ("export_report", "export_report_broken", "publish_slow")
NOT_REQUIRED_TOOLS: Final = ("search",)


def _build() -> tuple[Pipeline, InMemoryMetricReader, bool]:
    """The shells' pipeline (:mod:`otel_mcp_health.clientside.pipeline`) with the demo's metric
    readers, exporting over OTLP too when an endpoint for traces is configured."""
    otlp = bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )
    reader = InMemoryMetricReader()
    pipeline = build(otlp=otlp, metric_readers=lambda: [reader, *_otlp_metric_readers()])
    return pipeline, reader, otlp


def _otlp_metric_readers() -> list[MetricReader]:
    """A periodic OTLP/HTTP metric reader when an OTLP endpoint for metrics is configured."""
    if not (
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
    ):
        return []
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return [PeriodicExportingMetricReader(OTLPMetricExporter())]


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


def run(out: TextIO, err: TextIO) -> int:
    """Run every scenario and print the report; returns the exit code (0, 1 or 2)."""
    started = time.monotonic()
    try:
        built, reader, otlp = _build()
    except Exception as exc:  # noqa: BLE001 - e.g. an invalid OTEL_EXPORTER_OTLP_* setting
        err.write(f"otel-mcp-health demo: cannot build the telemetry pipeline ({exc})\n")
        return EXIT_SETUP_ERROR
    with (
        instrumented(built) as pipeline,
        _policies(),
        tempfile.TemporaryDirectory(prefix="otel-mcp-health-demo-") as workdir,
    ):
        demo = Demo(pipeline.provider.get_tracer(__name__), Path(workdir))
        out.write(
            f"otel-mcp-health demo: {len(SCENARIOS)} scenarios against real MCP servers "
            "(HTTP on 127.0.0.1, in-process, stdio)"
            + (", also exported via OTLP/HTTP" if otlp else "")
            + "\n\n"
        )
        anyio.run(drive, demo)
        return report(
            out,
            pipeline.spans(),
            reader,
            errors=demo.errors,
            scenarios=SCENARIOS,
            elapsed_s=time.monotonic() - started,
        )
