"""The processor's in-place reads of a finished SDK span equal the SDK's public reads."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from otel_mcp_health import _sdkspan
from otel_mcp_health import attributes as A
from otel_mcp_health.processor import McpHealthSpanProcessor, _spans
from otel_mcp_health.processor._spans import INSTRUMENTATION_SCOPE


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


class _Other(ReadableSpan):
    """Not the SDK's own class: the processor reads it through the public properties."""


def _copy_as_other(span: ReadableSpan) -> ReadableSpan:
    return _Other(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=dict(span.attributes or {}),
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def test_the_inlined_evidence_test_agrees_with_the_public_one() -> None:
    """``_spans.evidence`` reads the SDK's ReadableSpan in place: it and the public reads must
    pick the same spans (a picked span's session is tracked by the processor)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    cases = [  # scope, kind, attributes, carries our evidence
        ("other.lib", SpanKind.SERVER, {A.SESSION_KEY: "s1"}, False),
        ("other.lib", SpanKind.CLIENT, {"http.request.method": "GET"}, False),
        ("other.lib", SpanKind.CLIENT, {A.SESSION_KEY: "s2", A.MCP_METHOD_NAME: "ping"}, True),
        (INSTRUMENTATION_SCOPE, SpanKind.INTERNAL, {A.SESSION_KEY: "s3"}, True),
        (INSTRUMENTATION_SCOPE, SpanKind.CLIENT, {"x": 1}, True),
    ]
    for scope, kind, attributes, expected in cases:
        provider.get_tracer(scope).start_span("s", kind=kind, attributes=attributes).end()
        span = exporter.get_finished_spans()[-1]
        assert type(span) is ReadableSpan
        for variant in (span, _copy_as_other(span)):
            assert (_spans.evidence(variant) is not None) is expected
            processor = McpHealthSpanProcessor(SimpleSpanProcessor(InMemorySpanExporter()))
            processor.on_end(variant)
            assert len(processor._sessions) == (
                1 if expected and A.SESSION_KEY in attributes else 0
            )


def test_an_open_span_is_read_key_by_key_in_place() -> None:
    provider = TracerProvider()
    span = provider.get_tracer("test.sdkspan").start_span("open", attributes={"a": "x"})
    attrs = _sdkspan.open_attributes(span)
    assert attrs.get("a") == "x"
    span.set_attribute("b", 2)  # still open: later attributes are seen
    assert attrs.get("b") == 2 == (span.attributes or {}).get("b")
    span.end()
    hand = ReadableSpan(name="hand", attributes={"a": 1})
    assert _sdkspan.open_attributes(hand).get("a") == 1


def _by_constructor(span: ReadableSpan, **changed: Any) -> ReadableSpan:
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        kind=span.kind,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
        **changed,
    )


def test_the_fast_copy_is_what_the_constructor_makes() -> None:
    for with_lists in (True, False):
        span = _finished(with_lists=with_lists)
        changed: dict[str, Any] = {
            "attributes": {"a": "y", "v": 1},
            "events": (Event("kept", {"x": 1}, timestamp=7),),
            "links": tuple(span.links),
            "status": Status(StatusCode.ERROR, "sanitized"),
        }
        fast = _sdkspan.copy(span, **changed)
        slow = _by_constructor(span, **changed)
        assert type(fast) is ReadableSpan
        assert vars(fast) == vars(slow)
        assert fast.to_json() == slow.to_json()
        assert vars(span)["_attributes"] is not fast.attributes  # the original is untouched
        assert dict(span.attributes or {})["a"] == "x"
    hand, unset = _Other(name="hand", attributes={"a": 1}), Status()
    copied = _sdkspan.copy(hand, attributes={"b": 2}, events=(), links=(), status=unset)
    assert type(copied) is ReadableSpan
    assert vars(copied) == vars(_by_constructor(hand, attributes={"b": 2}, status=unset))


class _Recorder(SpanProcessor):
    """A downstream span processor that keeps every span the processor forwards to it."""

    def __init__(self) -> None:
        self.ended: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span)


def test_a_span_our_reads_fail_on_is_forwarded_unchanged() -> None:
    recorder = _Recorder()
    processor = McpHealthSpanProcessor(recorder)
    odd = ReadableSpan(name="odd", instrumentation_scope=object())  # type: ignore[arg-type]
    processor.on_end(odd)  # its scope has no name: no exception reaches the host
    assert recorder.ended == [odd]
