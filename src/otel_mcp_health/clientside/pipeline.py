"""The telemetry pipeline of the commands: the one an instrumented agent has.

``TracerProvider`` → :class:`~otel_mcp_health.McpHealthSpanProcessor` → an in-memory exporter
(the shell reads the judged spans back from it) and, with ``otlp``, also a
``BatchSpanProcessor(OTLPSpanExporter())`` configured by the standard ``OTEL_EXPORTER_OTLP_*``
variables. :func:`instrumented` installs :class:`~otel_mcp_health.McpHealthInstrumentor` on this
provider for the duration of a run and removes it afterwards. The check asks for OTLP with
``--otlp`` and names its service (:data:`SERVICE_NAME`); the demo follows the OTLP environment
variables and adds its metric readers; ``pin`` records its discovery on it; the prober builds its
own router around :func:`judged_providers`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_mcp_health import McpHealthInstrumentor, McpHealthSpanProcessor

#: ``service.name`` of a check's (and a pin's) spans unless ``OTEL_SERVICE_NAME`` says otherwise.
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

    def shutdown(self) -> None:
        """Flush and stop both providers (the OTLP exporters are bounded by their own timeout)."""
        self.provider.shutdown()
        self.meters.shutdown()


def service_resource(service_name: str) -> Resource:
    """``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``, with ``service_name`` by default."""
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": service_name}))
    return resource


def build(
    *,
    otlp: bool,
    service_name: str | None = None,
    metric_readers: Callable[[], Sequence[MetricReader]] = tuple,
) -> Pipeline:
    """The providers and the processor, not yet instrumented.

    ``service_name``: the default ``service.name`` (``None``: the SDK's default resource);
    ``metric_readers`` as in :func:`judged_providers`.
    """
    exporter = InMemorySpanExporter()
    resource = service_resource(service_name) if service_name is not None else None
    provider, meters = judged_providers(
        [SimpleSpanProcessor(exporter)], otlp=otlp, resource=resource, metric_readers=metric_readers
    )
    return Pipeline(provider, exporter, meters)


def judged_providers(
    downstream: list[SpanProcessor],
    *,
    otlp: bool,
    resource: Resource | None,
    metric_readers: Callable[[], Sequence[MetricReader]],
) -> tuple[TracerProvider, MeterProvider]:
    """A tracer provider whose one span processor is the product's, handing every judged span to
    ``downstream`` (and, with ``otlp``, to a ``BatchSpanProcessor(OTLPSpanExporter())``), and the
    meter provider the processor records on. ``metric_readers`` is called once the span exporters
    exist, so an invalid OTLP setting fails before any periodic reader starts its thread."""
    if otlp:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        downstream = [*downstream, BatchSpanProcessor(OTLPSpanExporter())]
    meters = MeterProvider(metric_readers=metric_readers(), resource=resource)
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(McpHealthSpanProcessor(downstream, meter_provider=meters))
    return provider, meters


@contextmanager
def instrumented(pipeline: Pipeline, approved_catalog: str | None = None) -> Iterator[Pipeline]:
    """Instrument the ``mcp`` client on ``pipeline`` (judging discoveries against
    ``approved_catalog``, else the environment's); on exit undo that and shut it down."""
    instrumentor = McpHealthInstrumentor()
    instrumentor.instrument(
        tracer_provider=pipeline.provider,
        meter_provider=pipeline.meters,
        approved_catalog=approved_catalog,
    )
    try:
        yield pipeline
    finally:
        instrumentor.uninstrument()
        pipeline.shutdown()
