"""Test helpers: the in-memory pipeline and a builder of evidence-carrying MCP spans.

The builder emits spans through a real ``TracerProvider`` with explicit start/end times, under the
instrumentation's scope, carrying evidence records written by the instrumentation's own encoder
(``_codec``). It is used for rule-level tests; the scenarios with real MCP servers use the real
instrumentation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Sampler
from opentelemetry.trace import SpanKind, Tracer

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.evidence import (
    NOT_APPLICABLE,
    AuthorizationEvidence,
    CallEvidence,
    ExecutionEvidence,
    HandshakeEvidence,
    Page,
    TransportEvidence,
)
from otel_mcp_health.core.vocabulary import TransportOutcome
from otel_mcp_health.processor import McpHealthSpanProcessor
from otel_mcp_health.processor._spans import INSTRUMENTATION_SCOPE

#: 2026-11-30T10:00:00Z in nanoseconds: "t = 0" of every hand-built scenario.
T0 = 1_796_032_800 * 1_000_000_000
DIGEST = "sha256:" + "a" * 64
OTHER_DIGEST = "sha256:" + "b" * 64


def at(seconds: float) -> int:
    """Nanoseconds at ``seconds`` after (or before) t = 0."""
    return T0 + round(seconds * 1_000_000_000)


@dataclass
class Pipeline:
    """TracerProvider → McpHealthSpanProcessor → SimpleSpanProcessor → InMemorySpanExporter."""

    provider: TracerProvider
    processor: McpHealthSpanProcessor
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    meters: MeterProvider

    @classmethod
    def build(cls, *, sampler: Sampler | None = None, **options: Any) -> Pipeline:
        exporter = InMemorySpanExporter()
        reader = InMemoryMetricReader()
        meters = MeterProvider(metric_readers=[reader])
        processor = McpHealthSpanProcessor(
            SimpleSpanProcessor(exporter), meter_provider=meters, **options
        )
        provider = TracerProvider(
            resource=Resource.create({"service.name": "agent-under-test"}), sampler=sampler
        )
        provider.add_span_processor(processor)
        return cls(provider, processor, exporter, reader, meters)

    @property
    def tracer(self) -> Tracer:
        return self.provider.get_tracer(INSTRUMENTATION_SCOPE)

    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(prefix)]

    def last(self, prefix: str) -> ReadableSpan:
        found = self.named(prefix)
        assert found, (prefix, [s.name for s in self.spans()])
        return found[-1]

    def metric_points(self, name: str) -> list[dict[str, Any]]:
        data = self.reader.get_metrics_data()
        if data is None:
            return []
        points: list[dict[str, Any]] = []
        for rm in json.loads(data.to_json())["resource_metrics"]:
            for sm in rm["scope_metrics"]:
                for metric in sm["metrics"]:
                    if metric["name"] == name:
                        points.extend(metric["data"]["data_points"])
        return points

    def counts(self, name: str, label: str) -> dict[str, int]:
        """Sum of a counter's points by one label."""
        out: dict[str, int] = {}
        for point in self.metric_points(name):
            key = point["attributes"].get(label)
            out[key] = out.get(key, 0) + point["value"]
        return out


@dataclass
class SessionSpans:
    """Emits the spans of one MCP client session, the way the instrumentation records them."""

    tracer: Tracer
    key: str = "session-1"
    network: str | None = "tcp"
    server: tuple[str, int] = ("tools.example.test", 443)
    base: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.base = {A.SESSION_KEY: self.key}
        if self.network is not None:
            self.base[A.NETWORK_TRANSPORT] = self.network
        if self.network == "tcp":
            self.base[A.SERVER_ADDRESS], self.base[A.SERVER_PORT] = self.server

    def emit(
        self,
        name: str,
        attributes: Mapping[str, Any],
        start: float,
        end: float | None = None,
        *,
        kind: SpanKind = SpanKind.CLIENT,
        events: Iterable[tuple[str, Mapping[str, Any], float]] = (),
    ) -> None:
        span = self.tracer.start_span(
            name, kind=kind, attributes={**self.base, **attributes}, start_time=at(start)
        )
        for event_name, event_attrs, event_at in events:
            span.add_event(event_name, dict(event_attrs), timestamp=at(event_at))
        span.end(end_time=at(end if end is not None else start + 0.05))

    def _exchange(self) -> dict[str, Any]:
        """A delivered exchange: its transport and authorization (an HTTP 200 on the network)."""
        status = 200 if self.network == "tcp" else None
        authorization = (
            AuthorizationEvidence(http_status=status) if status is not None else NOT_APPLICABLE
        )
        return {
            "transport": TransportEvidence(
                outcome=TransportOutcome.OK, http_status=status, request_written=True
            ),
            "authorization": authorization,
        }

    def handshake(
        self,
        *,
        start: float = -120.0,
        negotiated: str | None = "2025-11-25",
        list_changed: bool = True,
        tools: bool = True,
        era: str = "initialize",
        **extra: Any,
    ) -> None:
        capabilities = {"tools": {"listChanged": list_changed}} if tools else {}
        evidence = HandshakeEvidence(
            requested_version="2025-11-25",
            negotiated_version=negotiated,
            capabilities=capabilities if negotiated is not None else None,
            **self._exchange(),
        )
        attrs = {A.MCP_METHOD_NAME: era, A.SESSION_ERA: era, **_codec.encode_handshake(evidence)}
        attrs.update(extra)
        self.emit(era, attrs, start)

    def traversal(
        self,
        pages: Sequence[tuple[str | None, str | None] | str],
        *,
        start: float,
        digest: str | None = DIGEST,
        internal: bool = False,
        **final_extra: Any,
    ) -> None:
        """Pages ``(cursor, next_cursor)`` 0.2 s apart; ``"fail"`` is a page that got -32602."""
        for index, page in enumerate(pages):
            attrs: dict[str, Any] = {
                A.MCP_METHOD_NAME: "tools/list",
                A.EVIDENCE_ORIGIN: A.ORIGIN_INTERNAL if internal else A.ORIGIN_APPLICATION,
                A.TRANSPORT_OUTCOME: "ok",
            }
            if page == "fail":
                attrs.update(_codec.encode_page(Page(failed=True, error_code=-32602)))
            else:
                cursor, next_cursor = page
                attrs[A.CATALOG_PAGE_INDEX] = index
                attrs[A.CATALOG_PAGE_TOOL_COUNT] = 2
                attrs.update(_codec.encode_page(Page(cursor=cursor, next_cursor=next_cursor)))
                if next_cursor is None and digest is not None:
                    attrs[A.CATALOG_DIGEST] = digest
                    attrs.update(final_extra)
            self.emit("tools/list", attrs, start + 0.2 * index, start + 0.2 * index + 0.1)

    def signal(self, start: float) -> None:
        self.emit(
            A.NOTIFICATION_SPAN_METHOD,
            {A.MCP_METHOD_NAME: A.NOTIFICATION_SPAN_METHOD},
            start,
            start,
            kind=SpanKind.SERVER,
        )

    def install(self, start: float, digest: str) -> None:
        self.emit(
            A.INSTALL_SPAN_NAME,
            {A.CATALOG_CLIENT_DIGEST: digest, A.CATALOG_CLIENT_SOURCE: "registered"},
            start,
            kind=SpanKind.INTERNAL,
        )

    def call(
        self,
        tool: str = "create_ticket",
        *,
        start: float = -1.0,
        end: float = 0.0,
        ok: bool = True,
        events: Iterable[tuple[str, Mapping[str, Any], float]] = (),
        **attrs: Any,
    ) -> None:
        """A ``tools/call`` span; ``ok`` pre-fills a clean result envelope."""
        base = self.call_attributes(tool, ok=ok)
        base.update(attrs)
        self.emit(f"tools/call {tool}", base, start, end, events=events)

    def call_attributes(self, tool: str, *, ok: bool = True) -> dict[str, Any]:
        """A ``tools/call`` span's attributes (without the session's ``base``)."""
        attrs: dict[str, Any] = {A.MCP_METHOD_NAME: "tools/call"}
        attrs.update(_codec.encode_clocks(30.0, None))
        exchange = self._exchange()
        if ok:
            call = CallEvidence(tool=tool, execution=ExecutionEvidence(is_error=False), **exchange)
        else:  # nothing observed yet: only whether the session has a network
            network = exchange["authorization"] is not NOT_APPLICABLE
            call = CallEvidence(tool=tool, authorization=None if network else NOT_APPLICABLE)
        attrs.update(_codec.encode_call(call))
        return attrs

    def end_session(self, start: float) -> None:
        self.emit(A.SESSION_END_SPAN_NAME, {}, start, kind=SpanKind.INTERNAL)

    def converged(self, *, start: float = -30.0) -> None:
        """Handshake plus one complete two-page traversal."""
        self.handshake()
        self.traversal([(None, "c1"), ("c1", None)], start=start)


def attrs(span: ReadableSpan) -> dict[str, Any]:
    """A span's attributes as a plain dict (empty when it has none)."""
    return dict(span.attributes or {})


def readiness(span: ReadableSpan) -> tuple[Any, Any, Any]:
    """The session's readiness without a call, on a span that judged the catalog."""
    a = attrs(span)
    return a.get(A.READINESS_VERDICT), a.get(A.READINESS_REASON), a.get(A.READINESS_NEXT_ACTION)


def verdict_of(span: ReadableSpan) -> dict[str, Any]:
    """The verdict fields of an exported span, shaped like the ``classify --json`` output."""
    attrs = span.attributes or {}
    return {
        "verdict": attrs.get(A.VERDICT),
        "firstFailedLayer": attrs.get(A.CALL_FIRST_FAILED_LAYER),
        "nextAction": attrs.get(A.NEXT_ACTION),
        "reason": attrs.get(A.REASON),
        "catalogVerdict": attrs.get(A.CATALOG_VERDICT),
    }


@contextmanager
def instrumenting(pipeline: Pipeline) -> Iterator[Pipeline]:
    """The real MCP client instrumentation on ``pipeline``'s providers, uninstrumented on exit
    (the pipeline itself stays open: its spans are read afterwards)."""
    from otel_mcp_health import McpHealthInstrumentor

    instrumentor = McpHealthInstrumentor()
    instrumentor.instrument(tracer_provider=pipeline.provider, meter_provider=pipeline.meters)
    try:
        yield pipeline
    finally:
        instrumentor.uninstrument()


@contextmanager
def instrumented_pipeline() -> Iterator[Pipeline]:
    """A new processor pipeline, instrumented; on exit uninstrumented, the registered outcome
    verifiers cleared and the provider shut down."""
    from otel_mcp_health.verifiers import clear_verifiers

    pipeline = Pipeline.build()
    try:
        with instrumenting(pipeline):
            yield pipeline
    finally:
        clear_verifiers()
        pipeline.provider.shutdown()
