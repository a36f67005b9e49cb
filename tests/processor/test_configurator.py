"""The ``mcp_health`` configurator's exporter factory, and the processor under concurrent load."""

from __future__ import annotations

import threading

import pytest
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.support.processor_helpers import Pipeline, SessionSpans

from otel_mcp_health import attributes as A
from otel_mcp_health.configurator import McpHealthConfigurator, _ExportProcessors
from otel_mcp_health.processor import McpHealthSpanProcessor
from otel_mcp_health.processor._spans import INSTRUMENTATION_SCOPE


def test_one_health_processor_owns_every_exporter() -> None:
    factory = _ExportProcessors()
    first, second = InMemorySpanExporter(), InMemorySpanExporter()
    provider = TracerProvider()
    owner = factory(first)
    inert = factory(second)
    assert isinstance(owner, McpHealthSpanProcessor)
    assert type(inert) is SpanProcessor  # the SDK adds it too; it does nothing
    provider.add_span_processor(owner)
    provider.add_span_processor(inert)
    spans = SessionSpans(provider.get_tracer(INSTRUMENTATION_SCOPE))
    spans.converged()
    spans.call()
    assert provider.force_flush()
    for exporter in (first, second):
        (call,) = [s for s in exporter.get_finished_spans() if s.name.startswith("tools/call")]
        assert (call.attributes or {})[A.VERDICT] == "unverified"
    provider.shutdown()


def test_the_configurator_passes_the_factory_to_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    import opentelemetry.sdk._configuration as sdk_configuration

    seen: dict[str, object] = {}

    def fake_configure(self: object, **kwargs: object) -> None:
        seen.update(kwargs)

    monkeypatch.setattr(sdk_configuration._OTelSDKConfigurator, "_configure", fake_configure)
    McpHealthConfigurator().configure(auto_instrumentation_version="test")
    assert isinstance(seen["export_span_processor"], _ExportProcessors)
    assert seen["auto_instrumentation_version"] == "test"


def test_concurrent_sessions_on_many_threads() -> None:
    pipeline = Pipeline.build()
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def worker(n: int) -> None:
        try:
            barrier.wait()
            for m in range(50):
                spans = SessionSpans(pipeline.tracer, key=f"t{n}-{m}")
                spans.converged()
                spans.call()
                spans.end_session(1)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    calls = pipeline.named("tools/call")
    assert len(calls) == 400
    assert {(s.attributes or {})[A.VERDICT] for s in calls} == {"unverified"}
    assert len(pipeline.processor._sessions) == 0
