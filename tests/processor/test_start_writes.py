"""Prevalidated attribute writes (``otel_mcp_health._sdkspan``): a request span starts without
its attributes and gets them written into the SDK's store directly only where nothing looks at
them while it starts; whoever looks (an attribute-aware sampler, a second span processor) sees
them as before, and span limits bound them exactly as the SDK does.

Real pipelines (``TracerProvider`` → ``McpHealthSpanProcessor`` → ``SimpleSpanProcessor``), the
real ``mcp`` client against a real in-process server.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import anyio
import pytest
from mcp import Client
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import (
    ConcurrentMultiSpanProcessor,
    ReadableSpan,
    Span,
    SpanLimits,
    SpanProcessor,
    TracerProvider,
)
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_ON,
    Decision,
    ParentBased,
    ParentBasedTraceIdRatio,
    Sampler,
    SamplingResult,
    StaticSampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import Link, NoOpTracerProvider, SpanKind
from opentelemetry.util.types import Attributes
from tests.integration.mcp_health_servers import build_server
from tests.support.processor_helpers import Pipeline, instrumenting

from otel_mcp_health import McpHealthInstrumentor, _sdkspan
from otel_mcp_health import attributes as A
from otel_mcp_health.processor import McpHealthSpanProcessor

pytestmark = pytest.mark.anyio


class ByTool(Sampler):
    """Drops the calls of one tool, read from the start attributes; keeps what it was shown."""

    def __init__(self, dropped: str) -> None:
        self.dropped = dropped
        self.shown: dict[str, dict[str, Any]] = {}

    def should_sample(  # noqa: PLR0917 - the SDK's Sampler signature
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        attrs = dict(attributes or {})
        self.shown[name] = attrs
        drop = attrs.get(A.GEN_AI_TOOL_NAME) == self.dropped
        return SamplingResult(Decision.DROP if drop else Decision.RECORD_AND_SAMPLE, attributes)

    def get_description(self) -> str:
        return "ByTool"


class StartSeen(SpanProcessor):
    """Keeps the attributes each span carries in ``on_start``."""

    def __init__(self) -> None:
        self.seen: dict[str, dict[str, Any]] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.seen[span.name] = dict(span.attributes or {})


class Run:
    """One instrumented session on its own provider: its exporter and its providers."""

    def __init__(self, **provider: Any) -> None:
        self.exporter = InMemorySpanExporter()
        self.meters = MeterProvider()
        self.downstream: list[SpanProcessor] = [SimpleSpanProcessor(self.exporter)]
        self.processor = McpHealthSpanProcessor(self.downstream, meter_provider=self.meters)
        self.provider = TracerProvider(**provider)
        self.provider.add_span_processor(self.processor)

    async def session(self) -> None:
        instrumentor = McpHealthInstrumentor()
        instrumentor.instrument(tracer_provider=self.provider, meter_provider=self.meters)
        try:
            async with Client(build_server(), mode="legacy") as client:
                await client.list_tools()
                await client.call_tool("create_ticket", {"title": "t", "priority": "p"})
                await client.call_tool("fail", {})
        finally:
            instrumentor.uninstrument()

    def span(self, name: str) -> ReadableSpan:
        (found,) = [s for s in self.exporter.get_finished_spans() if s.name == name]
        return found

    def names(self) -> list[str]:
        return [s.name for s in self.exporter.get_finished_spans()]


CALL = "tools/call create_ticket"


def _starts_with(attributes: Any, start: dict[str, Any]) -> None:
    """``start`` holds the call's start attributes: each as the exported span carries it."""
    assert len(start) >= 8, start
    assert start.items() <= dict(attributes).items()
    assert start[A.MCP_METHOD_NAME] == "tools/call"
    assert start[A.GEN_AI_TOOL_NAME] == "create_ticket"
    assert isinstance(start[A.SESSION_KEY], str)


async def test_the_plain_pipeline_writes_directly() -> None:
    """The pipeline of the tests below takes the direct path: our request spans start without
    attributes and get them in two direct writes, at their start and at their end, never
    through ``set_attributes`` (so the tests that add a looker show it is turned off, not never
    on)."""
    run = Run()
    public: list[str] = []
    direct: list[tuple[str, bool]] = []
    set_attributes, write = Span.set_attributes, _sdkspan.write

    def spy_public(span: Span, attributes: Any) -> None:
        public.append(span.name)
        set_attributes(span, attributes)

    def spy_direct(span: Any, attributes: Any) -> None:
        direct.append((span.name, A.MCP_METHOD_NAME in attributes))
        write(span, attributes)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Span, "set_attributes", spy_public)
        patch.setattr(_sdkspan, "write", spy_direct)
        await run.session()
    assert CALL in run.names()
    assert public == []
    assert [started for name, started in direct if name == CALL] == [True, False]
    assert _sdkspan.StartWrites(run.provider.get_tracer("t")).holds()


async def test_the_live_gauge_counts_a_call_that_started_without_attributes() -> None:
    """The processor tracks our span at its start, before its attributes are written, and counts
    it as a live call once they are."""
    pipeline = Pipeline.build()
    assert _sdkspan.StartWrites(pipeline.tracer).holds()

    def live() -> dict[str, int]:
        points = pipeline.metric_points(A.METRIC_CALLS_IN_FLIGHT)
        return {p["attributes"][A.LIVE_STATE]: p["value"] for p in points}

    observed: dict[str, int] = {}
    with instrumenting(pipeline):
        async with Client(build_server(), mode="legacy") as client:
            await client.list_tools()
            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(lambda: client.call_tool("slow", {"seconds": 30}))
                    while not any(observed.values()):
                        await anyio.sleep(0.01)
                        observed = live()
                    tg.cancel_scope.cancel()
    assert observed == {"working": 1, "stalled": 0, "waiting_for_user": 0}
    assert not pipeline.processor._inflight  # forgotten when it ended


def test_our_spans_that_start_with_attributes_but_no_call_are_not_kept_live() -> None:
    """Only a span of ours that starts bare may turn out to be a call; a connection's span (it
    starts with its attributes and lives as long as its session) is never kept, so thousands of
    open sessions cannot fill the map that bounds the spans of other libraries."""
    pipeline = Pipeline.build()
    connect = pipeline.tracer.start_span(
        A.CONNECT_SPAN_NAME, kind=SpanKind.CLIENT, attributes={A.NETWORK_TRANSPORT: "tcp"}
    )
    assert not pipeline.processor._inflight
    bare = pipeline.tracer.start_span("tools/call lookup", kind=SpanKind.CLIENT)
    assert list(pipeline.processor._inflight) == [bare.get_span_context().span_id]
    bare.end()
    connect.end()
    assert not pipeline.processor._inflight


async def test_an_attribute_aware_sampler_sees_the_start_attributes_and_decides() -> None:
    sampler = ByTool("fail")
    run = Run(sampler=sampler)
    await run.session()
    assert "tools/call fail" not in run.names()  # its decision holds
    assert sampler.shown["tools/call fail"][A.GEN_AI_TOOL_NAME] == "fail"
    _starts_with(run.span(CALL).attributes, sampler.shown[CALL])


@pytest.mark.parametrize("where", ["provider", "downstream"])
async def test_a_second_span_processor_sees_the_start_attributes(where: str) -> None:
    """Beside ours on the provider, or one of the processors ours owns."""
    run = Run()
    seen = StartSeen()
    if where == "provider":
        run.provider.add_span_processor(seen)
    else:
        run.processor.add_downstream(seen)
    await run.session()
    _starts_with(run.span(CALL).attributes, seen.seen[CALL])


@contextmanager
def _public_path() -> Iterator[None]:
    """Every write through ``set_attributes`` and every span started with its attributes."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_sdkspan.StartWrites, "holds", lambda self: False)
        patch.setattr(_sdkspan, "write", lambda span, attributes: span.set_attributes(attributes))
        yield


#: Values that differ from one run to the next (compared by key and type only).
_PER_RUN = frozenset({A.SESSION_KEY, A.SERVER_TARGET_KEY, A.INCIDENT_KEY})


def _exported(run: Run) -> list[tuple[str, list[tuple[str, str, Any]], int]]:
    return [
        (
            span.name,
            [
                (key, type(value).__name__, None if key in _PER_RUN else value)
                for key, value in (span.attributes or {}).items()
            ],
            span.dropped_attributes,
        )
        for span in run.exporter.get_finished_spans()
    ]


@pytest.mark.parametrize(
    ("count", "length"),
    [(12, None), (5, None), (None, 6), (12, 6)],
    ids=["count-12", "count-5", "length-6", "both"],
)
async def test_span_limits_bound_the_attributes_as_the_sdk_does(
    count: int | None, length: int | None
) -> None:
    """The exported spans are those of the public path: the same keys, values, types and
    order, the same count of dropped attributes."""
    limits = SpanLimits(max_span_attributes=count, max_span_attribute_length=length)
    direct = Run(span_limits=limits)
    await direct.session()
    public = Run(span_limits=limits)
    with _public_path():
        await public.session()
    exported = _exported(direct)
    assert exported == _exported(public)
    # the limits bit: attributes dropped, values shortened
    assert any(dropped for _, _, dropped in exported) is (count is not None)
    values = [value for _, attrs, _ in exported for _, _, value in attrs]
    assert any(isinstance(v, str) and len(v) == length for v in values) is (length is not None)


def _tracer(
    sampler: Sampler | None = None,
    processors: Sequence[SpanProcessor] = (),
    **provider: Any,
) -> Any:
    tracer_provider = TracerProvider(sampler=sampler, shutdown_on_exit=False, **provider)
    for processor in processors:
        tracer_provider.add_span_processor(processor)
    return tracer_provider.get_tracer("t")


def _ours(*downstream: SpanProcessor) -> McpHealthSpanProcessor:
    return McpHealthSpanProcessor(list(downstream), meter_provider=MeterProvider())


class OwnStatic(StaticSampler):
    """A subclass of an attribute-blind sampler: it may read attributes."""


_EXPORT = InMemorySpanExporter()


@pytest.mark.parametrize(
    ("sampler", "blind"),
    [
        (None, True),
        (ALWAYS_ON, True),
        (ALWAYS_OFF, True),
        (DEFAULT_ON, True),
        (TraceIdRatioBased(0.5), True),
        (ParentBasedTraceIdRatio(0.5), True),
        (ParentBased(ALWAYS_ON, local_parent_sampled=TraceIdRatioBased(0.5)), True),
        (OwnStatic(Decision.RECORD_AND_SAMPLE), False),
        (ByTool("x"), False),
        (ParentBased(ByTool("x")), False),
        (ParentBased(ALWAYS_ON, remote_parent_not_sampled=ByTool("x")), False),
    ],
)
def test_only_the_sdks_attribute_blind_samplers_allow_direct_writes(
    sampler: Sampler | None, blind: bool
) -> None:
    tracer = _tracer(sampler, [_ours(SimpleSpanProcessor(_EXPORT))])
    assert _sdkspan.StartWrites(tracer).holds() is blind


@pytest.mark.parametrize(
    ("processors", "blind"),
    [
        (list, True),
        (lambda: [SimpleSpanProcessor(_EXPORT)], True),
        (lambda: [BatchSpanProcessor(_EXPORT)], True),
        (lambda: [_ours(SimpleSpanProcessor(_EXPORT), BatchSpanProcessor(_EXPORT))], True),
        (lambda: [_ours(_ours(SimpleSpanProcessor(_EXPORT)))], True),
        (lambda: [_ours(SimpleSpanProcessor(_EXPORT)), StartSeen()], False),
        (lambda: [_ours(StartSeen())], False),
        (lambda: [_ours(_ours(StartSeen()))], False),
    ],
    ids=[
        "none",
        "simple",
        "batch",
        "ours-owning-both",
        "ours-in-ours",
        "a-second-processor",
        "ours-owning-another",
        "nested-other",
    ],
)
def test_only_processors_blind_in_on_start_allow_direct_writes(
    processors: Any, blind: bool
) -> None:
    assert _sdkspan.StartWrites(_tracer(processors=processors())).holds() is blind


def test_other_tracers_and_limits_take_the_public_path() -> None:
    ours = [_ours(SimpleSpanProcessor(_EXPORT))]
    length = SpanLimits(max_span_attribute_length=10)
    assert not _sdkspan.StartWrites(_tracer(processors=ours, span_limits=length)).holds()
    assert not _sdkspan.StartWrites(NoOpTracerProvider().get_tracer("t")).holds()
    concurrent = TracerProvider(
        active_span_processor=ConcurrentMultiSpanProcessor(), shutdown_on_exit=False
    )
    assert not _sdkspan.StartWrites(concurrent.get_tracer("t")).holds()


def test_a_processor_added_later_turns_direct_writes_off() -> None:
    provider = TracerProvider(shutdown_on_exit=False)
    ours = _ours(SimpleSpanProcessor(_EXPORT))
    provider.add_span_processor(ours)
    writes = _sdkspan.StartWrites(provider.get_tracer("t"))
    assert writes.holds()
    ours.add_downstream(StartSeen())
    assert not writes.holds()
    provider2 = TracerProvider(shutdown_on_exit=False)
    provider2.add_span_processor(_ours(SimpleSpanProcessor(_EXPORT)))
    writes = _sdkspan.StartWrites(provider2.get_tracer("t"))
    assert writes.holds()
    provider2.add_span_processor(StartSeen())
    assert not writes.holds()


@pytest.mark.parametrize(
    "attributes",
    [
        {"a": [1, 2]},  # a list: the SDK stores a tuple
        {"a": (1, "x")},  # a mixed tuple
        {"a": None},
        {"a": b"x"},
        {"": 1},
        {"a": True, "b": object()},
    ],
    ids=["list", "mixed", "none", "bytes", "empty-key", "object"],
)
def test_anything_but_plain_values_goes_through_set_attributes(attributes: Any) -> None:
    tracer = _tracer()
    direct, public = tracer.start_span("d"), tracer.start_span("p")
    calls: list[Any] = []
    with pytest.MonkeyPatch.context() as patch:
        original = Span.set_attributes

        def spy(span: Span, attrs: Any) -> None:
            calls.append(span.name)
            original(span, attrs)

        patch.setattr(Span, "set_attributes", spy)
        _sdkspan.write(direct, attributes)
    public.set_attributes(attributes)
    assert calls == ["d"]
    assert dict(direct.attributes or {}) == dict(public.attributes or {})


def test_a_direct_write_keeps_the_sdks_order_and_an_ended_span_takes_nothing() -> None:
    tracer = _tracer()
    direct, public = tracer.start_span("d"), tracer.start_span("p")
    for attrs in ({"a": 1, "b": "x", "c": (1.0, 2.0)}, {"b": "y", "d": True}, {"a": 1}):
        _sdkspan.write(direct, attrs)
        public.set_attributes(attrs)
    assert list((direct.attributes or {}).items()) == list((public.attributes or {}).items())
    assert list(direct.attributes or {}) == ["c", "b", "d", "a"]
    direct.end()
    _sdkspan.write(direct, {"e": 1})
    assert "e" not in (direct.attributes or {})
