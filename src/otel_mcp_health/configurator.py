"""Zero-code setup: an OpenTelemetry SDK configurator whose exported spans carry verdicts.

``opentelemetry-instrument`` builds the SDK through a *configurator* chosen by
``OTEL_PYTHON_CONFIGURATOR``. This package registers one named ``mcp_health``: it is the SDK's
standard configurator (same environment variables: ``OTEL_TRACES_EXPORTER``,
``OTEL_EXPORTER_OTLP_*``, ``OTEL_TRACES_SAMPLER``...) except that every trace exporter is wrapped
by :class:`otel_mcp_health.McpHealthSpanProcessor` in front of its usual ``BatchSpanProcessor``::

    pip install 'otel-mcp-health[instruments]' opentelemetry-distro
    OTEL_PYTHON_CONFIGURATOR=mcp_health \\
    OTEL_SERVICE_NAME=my-agent \\
    OTEL_TRACES_EXPORTER=otlp OTEL_METRICS_EXPORTER=otlp \\
    OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf \\
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 \\
    opentelemetry-instrument python app.py

``OTEL_PYTHON_CONFIGURATOR`` is needed only when another configurator is installed too (e.g.
``opentelemetry-distro``'s); with ours alone it is picked automatically. The processor reads its
options from the ``OTEL_INSTRUMENTATION_MCP_HEALTH_*`` variables
(:mod:`otel_mcp_health.environment_variables`); ``..._PROCESSOR_ENABLED=false`` turns verdicts off.

With several trace exporters (``OTEL_TRACES_EXPORTER=otlp,console``) one processor owns all their
batch processors, so each session is judged once and each verdict metric is counted once.

Exit time: the processor adds no flush of its own; at exit the batch processors and the metric
reader flush exactly as under the SDK's configurator, each bounded by its exporter's timeout
(``OTEL_EXPORTER_OTLP_TIMEOUT``, seconds). With the collector down that is what a program waits
for (docs/configuration.md#exit-time; ``tests/test_exit_time.py`` compares both configurators).
"""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk._configuration import _OTelSDKConfigurator
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from otel_mcp_health.processor import McpHealthSpanProcessor


class _ExportProcessors:
    """The ``export_span_processor`` factory: one health processor in front of every exporter.

    The SDK calls the factory once per trace exporter and adds what it returns to the provider.
    The first call returns the health processor; later calls add their batch processor to it and
    return an inert processor, so every span is judged once and exported once per exporter.
    """

    def __init__(self) -> None:
        self.processor: McpHealthSpanProcessor | None = None

    def __call__(self, exporter: SpanExporter) -> SpanProcessor:
        batch = BatchSpanProcessor(exporter)
        if self.processor is None:
            self.processor = McpHealthSpanProcessor(batch)
            return self.processor
        self.processor.add_downstream(batch)
        return SpanProcessor()


class McpHealthConfigurator(_OTelSDKConfigurator):
    """The SDK configurator with every exporting span processor wrapped for verdicts."""

    def _configure(self, **kwargs: Any) -> None:
        kwargs.setdefault("export_span_processor", _ExportProcessors())
        super()._configure(**kwargs)  # type: ignore[no-untyped-call]  # the SDK is untyped here


__all__ = ["McpHealthConfigurator"]
