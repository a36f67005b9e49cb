"""The processor's in-place reads of a finished SDK span equal the SDK's public reads."""

from __future__ import annotations

from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link

from otel_mcp_health import _sdkspan


def _finished(*, with_lists: bool) -> ReadableSpan:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test.sdkspan")
    with tracer.start_as_current_span("linked") as other:
        pass
    links = [Link(other.get_span_context(), {"k": 1})] if with_lists else []
    span = tracer.start_span("s", attributes={"a": "x", "n": 3, "t": ("u", "v")}, links=links)
    if with_lists:
        span.add_event("e1", {"x": 1})
        span.add_event("e2")
    span.set_attribute("late", True)
    span.end()
    return exporter.get_finished_spans()[-1]


def test_a_finished_sdk_span_reads_the_same_in_place() -> None:
    for with_lists in (True, False):
        span = _finished(with_lists=with_lists)
        assert _sdkspan.attributes(span) == dict(span.attributes or {})
        assert tuple(_sdkspan.events(span)) == tuple(span.events)
        assert tuple(_sdkspan.links(span)) == tuple(span.links)
        assert isinstance(_sdkspan.events(span), tuple)
        assert isinstance(_sdkspan.links(span), tuple)


def test_the_in_place_attributes_are_the_frozen_ones() -> None:
    span = _finished(with_lists=False)
    assert _sdkspan.attributes(span) is _sdkspan.attributes(span)  # no copy of a frozen span


def test_a_hand_built_span_is_read_through_the_public_properties() -> None:
    event = Event("e", {"x": 1}, timestamp=5)
    span = ReadableSpan(name="hand", attributes={"a": 1}, events=[event], links=[])
    attrs = _sdkspan.attributes(span)
    assert attrs == {"a": 1}
    assert _sdkspan.events(span) == (event,)
    assert _sdkspan.links(span) == ()
