"""Fixtures of the integration suite: real SDK, real servers, in-memory OpenTelemetry pipelines."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.integration.mcp_health_support import Captured

from otel_mcp_health.instrumentation import McpHealthInstrumentor

_GLOBAL_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def sdk_exporter() -> InMemorySpanExporter:
    """What the *global* provider exports: the SDK's own spans (and the in-process servers').

    The SDK's built-in client spans use the global provider; with our instrumentation active none
    may appear there (exactly one CLIENT span per request, ours).
    """
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider), "another test set a non-SDK global provider"
    provider.add_span_processor(SimpleSpanProcessor(_GLOBAL_EXPORTER))
    return _GLOBAL_EXPORTER


@pytest.fixture(scope="session")
def http_base_url() -> Iterator[str]:
    """One real streamable-HTTP server (uvicorn, 127.0.0.1, ephemeral port) for the session.

    It runs on an event loop of its own, in a thread (a blocking portal): a session-scoped
    async fixture would hold the test runner's event loop for the rest of the session, and with
    sniffio installed (the OpenAI and Anthropic SDKs bring it) every later synchronous test that
    starts an event loop (the CLI's ``anyio.run``) would fail with "Already running asyncio"."""
    from anyio.from_thread import start_blocking_portal
    from tests.integration.mcp_health_servers import build_server, serve_http

    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(serve_http(build_server())) as url,
    ):
        yield url


class _Started(SpanProcessor):
    """Keeps every started span, so a test can look at a span while it is still open."""

    def __init__(self, started: list[Span]) -> None:
        self._started = started

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self._started.append(span)


@pytest.fixture
def captured(sdk_exporter: InMemorySpanExporter) -> Iterator[Captured]:
    """Instrument with a fresh TracerProvider + MeterProvider; uninstrument afterwards."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    started: list[Span] = []
    provider.add_span_processor(_Started(started))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    instrumentor = McpHealthInstrumentor()
    instrumentor.instrument(tracer_provider=provider, meter_provider=meter_provider)
    sdk_exporter.clear()
    try:
        yield Captured(exporter, reader, sdk_exporter, provider, started)
    finally:
        instrumentor.uninstrument()
