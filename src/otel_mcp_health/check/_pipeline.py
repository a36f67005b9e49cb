"""The telemetry pipeline of one check: the same instrumentation and processor as an agent's.

``TracerProvider`` → :class:`~otel_mcp_health.McpHealthSpanProcessor` → an in-memory exporter
(the report reads the judged spans back from it) and, with ``--otlp``, also a
``BatchSpanProcessor(OTLPSpanExporter())`` configured by the standard ``OTEL_EXPORTER_OTLP_*``
variables. :class:`~otel_mcp_health.McpHealthInstrumentor` is installed on this provider for the
duration of the check and removed afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_mcp_health import McpHealthInstrumentor, McpHealthSpanProcessor

#: ``service.name`` of a check's spans unless ``OTEL_SERVICE_NAME`` says otherwise.
SERVICE_NAME = "otel-mcp-health-check"


@dataclass(frozen=True, slots=True)
class Pipeline:
    """The provider the instrumentation records on, and the judged spans it exported."""

    provider: TracerProvider
    exporter: InMemorySpanExporter
    meters: MeterProvider

    def spans(self) -> tuple[ReadableSpan, ...]:
        """Every exported span, in the order the spans ended."""
        return tuple(self.exporter.get_finished_spans())


@contextmanager
def instrumented(*, otlp: bool) -> Iterator[Pipeline]:
    """Build the pipeline, instrument the ``mcp`` client on it; undo both on exit."""
    exporter = InMemorySpanExporter()
    downstream: list[SpanProcessor] = [SimpleSpanProcessor(exporter)]
    if otlp:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        downstream.append(BatchSpanProcessor(OTLPSpanExporter()))
    resource = Resource.create()  # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    meters = MeterProvider(resource=resource)
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(McpHealthSpanProcessor(downstream, meter_provider=meters))
    instrumentor = McpHealthInstrumentor()
    instrumentor.instrument(tracer_provider=provider, meter_provider=meters)
    try:
        yield Pipeline(provider, exporter, meters)
    finally:
        instrumentor.uninstrument()
        provider.shutdown()  # flushes the OTLP exporter, bounded by its own timeout
        meters.shutdown()
