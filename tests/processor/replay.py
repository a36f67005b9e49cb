"""Recorded spans replayed into the processor, and the contract oracle's check of its verdicts.

A :class:`Recorder` keeps what a span processor sees, in order: every span's start and every
span's end (:attr:`Collect.events`). :func:`replay` hands that same sequence to a fresh
``McpHealthSpanProcessor``, starts included: the processor learns at a ``tools/call``'s start
that the call is open, and keeps its session's facts until the call ends (a call whose span
waits for its outcome receipt ends after its session). :func:`assert_oracle_agrees` gives the
same sequence to the contract oracle (``contract_oracle.py``) and compares every verdict.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.processor.contract_oracle import SUPPORTED_VERSIONS, ContractOracle, expected, judged

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.catalog import CatalogResult, classify_catalog
from otel_mcp_health.processor import McpHealthSpanProcessor
from otel_mcp_health.processor._memo import CallMemo, Decoded, decode
from otel_mcp_health.processor._sessions import Session
from otel_mcp_health.processor._spans import INSTRUMENTATION_SCOPE

MAX_AGE_S: Final = 300.0

#: One thing a span processor sees: a span starting or a span ending.
Event = tuple[Literal["start", "end"], ReadableSpan]


class Collect(SpanProcessor):
    """A span processor that keeps every start and end, in the order they happened."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.events.append(("start", span))

    def on_end(self, span: ReadableSpan) -> None:
        self.events.append(("end", span))

    @property
    def spans(self) -> list[ReadableSpan]:
        """The spans in the order they ended."""
        return [span for event, span in self.events if event == "end"]


class Recorder:
    """Emits spans once (``SessionSpans`` needs a ``.tracer``), for replay into processors."""

    def __init__(self) -> None:
        self.collect = Collect()
        self.provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
        self.provider.add_span_processor(self.collect)
        self.tracer = self.provider.get_tracer(INSTRUMENTATION_SCOPE)


class Unmemoized(CallMemo):
    """Decodes and judges every call afresh and classifies every catalog afresh."""

    def decoded(self, attrs: _codec.Attributes) -> Decoded:
        return decode(attrs)  # a new shape each time: no judgement is ever found in it

    def session_decoded(self, attrs: _codec.Attributes, session: Session) -> Decoded:
        return decode(attrs)

    def catalog_result(self, session: Session, now: int | None, max_age_s: float) -> CatalogResult:
        return classify_catalog(session.catalog(now, max_age_s))


def _processor(exporter: InMemorySpanExporter, reader: InMemoryMetricReader) -> Any:
    return McpHealthSpanProcessor(
        SimpleSpanProcessor(exporter),
        meter_provider=MeterProvider(metric_readers=[reader]),
        catalog_max_age_s=MAX_AGE_S,
        supported_versions=SUPPORTED_VERSIONS,
        session_idle_s=1e7,  # no idle expiry: the oracle knows nothing of the store's bounds
    )


def replay(events: list[Event], *, memoized: bool = True) -> tuple[list[Any], Any]:
    """The spans a fresh processor exports for ``events``, and its metric points."""
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    processor = _processor(exporter, reader)
    if not memoized:
        processor._engine._memo = Unmemoized()
    for event, span in events:
        if event == "start":
            processor.on_start(span)  # type: ignore[arg-type]  # the recorded SDK span
        else:
            processor.on_end(span)
    exported = list(exporter.get_finished_spans())
    data = reader.get_metrics_data()
    points = []
    if data is not None:
        for rm in json.loads(data.to_json())["resource_metrics"]:
            for sm in rm["scope_metrics"]:
                for metric in sm["metrics"]:
                    for p in metric["data"]["data_points"]:
                        value = p.get("value", p.get("sum"))
                        points.append((metric["name"], sorted(p["attributes"].items()), value))
    return exported, sorted(points, key=str)


def describe(span: ReadableSpan) -> str:
    a = span.attributes or {}
    shown = {
        k.removeprefix("mcp_health."): v
        for k, v in a.items()
        if k
        in {
            A.SERVER_TARGET_KEY,
            A.SESSION_CAPABILITY_TOOLS_LIST_CHANGED,
            A.MCP_PROTOCOL_VERSION,
            A.CATALOG_PAGE_INDEX,
            A.CATALOG_DIGEST,
            A.CATALOG_CLIENT_DIGEST,
            A.HTTP_RESPONSE_STATUS_CODE,
        }
        or k.startswith(("mcp_health.catalog.cursor", "mcp_health.catalog.page"))
    }
    start = (span.start_time or 0) / 1e9
    return f"{a.get(A.SESSION_KEY)} {span.name} @{start:.1f}s {shown}"


def assert_oracle_agrees(events: list[Event]) -> None:
    """Every span the processor exports carries the verdict attributes the oracle derives."""
    exported, _ = replay(events)
    by_id = {s.context.span_id: s for s in exported if s.context is not None}
    oracle = ContractOracle(max_age_s=MAX_AGE_S)
    spans: list[ReadableSpan] = []
    for event, span in events:
        if event == "start":
            oracle.started(span)
            continue
        spans.append(span)
        verdicts = oracle.judge(span)
        if verdicts is None:
            continue
        assert span.context is not None
        want = expected(span, verdicts)
        got = judged(by_id[span.context.span_id].attributes)
        if got != want:
            trail = "\n".join(f"  {i:2} {describe(s)}" for i, s in enumerate(spans))
            diff = {
                k: (got.get(k), want.get(k))
                for k in sorted(set(got) | set(want))
                if got.get(k) != want.get(k)
            }
            pytest.fail(
                f"span {len(spans) - 1} ({describe(span)}): processor vs oracle {diff}\n"
                f"stream:\n{trail}"
            )
