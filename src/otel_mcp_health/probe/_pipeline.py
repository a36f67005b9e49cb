"""The prober's telemetry pipeline: the one an instrumented agent has, shared by every probe.

``TracerProvider`` → :class:`~otel_mcp_health.McpHealthSpanProcessor` → a router that hands each
probe the judged spans of its own trace (every probe runs under one root span, so its spans share
a trace id) and, in scheduled mode, a ``BatchSpanProcessor(OTLPSpanExporter())``. The
instrumentation is installed once for the prober's life: probes run concurrently on it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import (
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from otel_mcp_health import McpHealthInstrumentor
from otel_mcp_health.clientside.pipeline import judged_providers, service_resource

#: ``service.name`` of the prober's telemetry unless ``OTEL_SERVICE_NAME`` says otherwise.
SERVICE_NAME = "otel-mcp-health-probe"


class SpanRouter(SpanExporter):
    """Keeps the spans of the traces a probe is waiting for; drops every other span."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[int, list[ReadableSpan]] = {}

    def open(self, trace_id: int) -> None:
        """Start collecting the spans of ``trace_id``."""
        with self._lock:
            self._open[trace_id] = []

    def close(self, trace_id: int) -> tuple[ReadableSpan, ...]:
        """Stop collecting ``trace_id``; its spans, in the order they ended."""
        with self._lock:
            return tuple(self._open.pop(trace_id, ()))

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            for span in spans:
                context = span.context
                bucket = self._open.get(context.trace_id) if context is not None else None
                if bucket is not None:
                    bucket.append(span)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            self._open.clear()


class ProbePipeline:
    """Providers, the product's processor and the instrumentation, for the prober's life."""

    def __init__(
        self,
        *,
        otlp: bool,
        metric_readers: Sequence[MetricReader] = (),
        approved_catalog: str | None = None,
        exporters: Sequence[SpanExporter] = (),
    ) -> None:
        """``exporters``: more exporters of every judged span (each behind a simple processor)."""
        self.router = SpanRouter()
        downstream: list[SpanProcessor] = [SimpleSpanProcessor(self.router)]
        downstream += [SimpleSpanProcessor(exporter) for exporter in exporters]
        self.provider, self.meters = judged_providers(
            downstream,
            otlp=otlp,
            resource=service_resource(SERVICE_NAME),
            metric_readers=lambda: list(metric_readers),
        )
        self.tracer = self.provider.get_tracer("otel_mcp_health.probe")
        self._instrumentor = McpHealthInstrumentor()
        options: dict[str, object] = {}
        if approved_catalog is not None:
            options["approved_catalog"] = approved_catalog
        self._instrumentor.instrument(
            tracer_provider=self.provider, meter_provider=self.meters, **options
        )

    def shutdown(self) -> None:
        """Remove the instrumentation, flush and stop both providers."""
        self._instrumentor.uninstrument()
        self.provider.shutdown()
        self.meters.shutdown()
