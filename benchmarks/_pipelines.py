"""The tracing configurations the call benchmarks compare, switchable inside one process.

``mcp`` 2.x creates its own client and server spans through the *global* tracer provider, which
can be set only once per process. To alternate configurations round after round in one process
(same warm caches, same drift), the global provider is a :class:`Switch` whose tracers delegate
every span to the provider of the configuration in force. Only public API is used: the SDK's
``TracerProvider``/``MeterProvider`` and ``otel_mcp_health.McpHealthInstrumentor`` /
``McpHealthSpanProcessor``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

from _common import NoOpExporter
from otel_mcp_health import McpHealthInstrumentor, McpHealthSpanProcessor


@dataclass(frozen=True)
class Config:
    label: str
    tracing: bool = True
    instrumented: bool = False
    processor: bool = False
    meters: bool = False


NO_TRACING = Config("no tracing", tracing=False)
BASELINE = Config("SDK's own tracing (baseline)")
INSTRUMENTED = Config("+ our instrumentation, no processor", instrumented=True)
PROCESSED = Config("+ our instrumentation and processor", instrumented=True, processor=True)
METERED = Config(
    "+ instrumentation, processor and an SDK MeterProvider",
    instrumented=True,
    processor=True,
    meters=True,
)
CONFIGS = (NO_TRACING, BASELINE, INSTRUMENTED, PROCESSED, METERED)


class _SwitchTracer(trace.Tracer):
    def __init__(self, switch: Switch, args: tuple[Any, ...]) -> None:
        self._switch = switch
        self._args = args
        self._inner: tuple[trace.TracerProvider, trace.Tracer] | None = None

    def _tracer(self) -> trace.Tracer:
        provider = self._switch.inner
        if self._inner is None or self._inner[0] is not provider:
            self._inner = (provider, provider.get_tracer(*self._args))
        return self._inner[1]

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return self._tracer().start_span(*args, **kwargs)

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        return self._tracer().start_as_current_span(*args, **kwargs)


class Switch(trace.TracerProvider):
    """The global tracer provider: every tracer follows :attr:`inner`, the one in force."""

    def __init__(self) -> None:
        self.inner: trace.TracerProvider = trace.NoOpTracerProvider()

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> trace.Tracer:
        args = (instrumenting_module_name, instrumenting_library_version, schema_url, attributes)
        return _SwitchTracer(self, args)


SWITCH = Switch()


def install() -> None:
    """Make :data:`SWITCH` the global tracer provider (once, before any span is made)."""
    trace.set_tracer_provider(SWITCH)


@contextmanager
def configured(config: Config, exporter: SpanExporter | None = None) -> Iterator[None]:
    """Put ``config`` in force: one SDK pipeline exporting to a no-op exporter (or ``exporter``),
    the SDK's spans and ours through it, our processor in front of the exporter when asked, and a
    MeterProvider for the instrumentation and the processor when asked (else the global no-op
    one)."""
    meters = MeterProvider(metric_readers=[InMemoryMetricReader()]) if config.meters else None
    exporting: SpanProcessor = SimpleSpanProcessor(exporter or NoOpExporter())
    provider = TracerProvider()
    provider.add_span_processor(
        McpHealthSpanProcessor(exporting, meter_provider=meters) if config.processor else exporting
    )
    instrumentor = McpHealthInstrumentor()
    SWITCH.inner = provider if config.tracing else trace.NoOpTracerProvider()
    if config.instrumented:
        instrumentor.instrument(tracer_provider=provider, meter_provider=meters)
    try:
        yield
    finally:
        if config.instrumented:
            instrumentor.uninstrument()
        SWITCH.inner = trace.NoOpTracerProvider()
        provider.shutdown()
        if meters is not None:
            meters.shutdown()
