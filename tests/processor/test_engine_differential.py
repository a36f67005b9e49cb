"""The incremental engine gives exactly the verdicts of the full derivation.

The engine memoizes each session's handshake facts and catalog verdict and judges a call from
those plus the call's own evidence; the oracle (``full_derivation.FullDerivation``, in the tests
only) re-derives the whole session for every span (the former algorithm). The same recorded spans
are replayed into both, and every exported attribute and metric value must be equal: over every
row of the parity scenario table and over a hypothesis stream of sessions (handshakes, pages,
signals, installs, calls, ends), three sessions of which may name the same server and so share its
catalog state.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.processor.full_derivation import install as install_full_derivation
from tests.processor.test_parity import SCENARIOS, Scenario, emit
from tests.support.processor_helpers import DIGEST, OTHER_DIGEST, SessionSpans

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.evidence import AuthorizationEvidence, ExecutionEvidence, Page
from otel_mcp_health.core.reasons import Reason
from otel_mcp_health.core.vocabulary import OutcomeResult
from otel_mcp_health.processor import McpHealthSpanProcessor
from otel_mcp_health.processor._spans import INSTRUMENTATION_SCOPE


class _Collect(SpanProcessor):
    """A span processor that keeps every ended span, in the order they ended."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


class _Recorder:
    """Emits spans once (``SessionSpans`` needs a ``.tracer``), for replay into processors."""

    def __init__(self) -> None:
        self.collect = _Collect()
        self.provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
        self.provider.add_span_processor(self.collect)
        self.tracer = self.provider.get_tracer(INSTRUMENTATION_SCOPE)


def _replay(spans: list[ReadableSpan], *, incremental: bool) -> tuple[list[Any], Any]:
    exporter = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    processor = McpHealthSpanProcessor(
        SimpleSpanProcessor(exporter), meter_provider=MeterProvider(metric_readers=[reader])
    )
    if not incremental:
        install_full_derivation(processor)
    for span in spans:
        processor.on_end(span)
    exported = [(s.name, dict(s.attributes or {})) for s in exporter.get_finished_spans()]
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


def _assert_same(record: Callable[[_Recorder], None]) -> None:
    recorder = _Recorder()
    record(recorder)
    spans = recorder.collect.spans
    assert _replay(spans, incremental=True) == _replay(spans, incremental=False)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_every_scenario_row_is_judged_identically(scenario: Scenario) -> None:
    _assert_same(lambda recorder: emit(scenario, recorder))  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------
# A hypothesis stream of sessions
# ----------------------------------------------------------------------------------------------
_CURSORS = st.sampled_from([None, "c1", "c2", "c3"])
_HANDSHAKE = st.fixed_dictionaries(
    {
        "kind": st.just("handshake"),
        "list_changed": st.booleans(),
        "tools": st.booleans(),
        "negotiated": st.sampled_from(["2025-11-25", "1999-01-01", None]),
        # the server the session names: sessions of one server share its catalog state
        "server": st.sampled_from(["a", "b", None]),
    }
)
_PAGE = st.fixed_dictionaries(
    {
        "kind": st.just("page"),
        "cursor": _CURSORS,
        "next": _CURSORS,
        "fail": st.booleans(),
        "digest": st.sampled_from([DIGEST, OTHER_DIGEST, None]),
    }
)
_CALL = st.fixed_dictionaries(
    {
        "kind": st.just("call"),
        "tool": st.sampled_from(["create_ticket", "lookup"]),
        "outcome": st.sampled_from(["ok", "connection_lost", "http_error", None]),
        "status": st.sampled_from([200, 401, 403, 503, None]),
        "is_error": st.sampled_from([True, False, None]),
        "timed_out": st.booleans(),
        "read_only": st.sampled_from([True, False, None]),
        "contract": st.sampled_from(["ok", "unknown_tool", "missing_required_argument", None]),
        "receipt": st.sampled_from(["passed", "failed", None]),
        "duration": st.sampled_from([0.1, 45.0]),
    }
)
_OTHER = st.one_of(
    st.fixed_dictionaries({"kind": st.just("signal")}),
    st.fixed_dictionaries(
        {"kind": st.just("install"), "digest": st.sampled_from([DIGEST, OTHER_DIGEST, None])}
    ),
    st.fixed_dictionaries({"kind": st.just("end")}),
)
_EVENT = st.tuples(
    st.sampled_from(["s1", "s2", "s3"]),
    st.sampled_from([0.5, 10.0, 400.0]),  # seconds since the previous event (crosses max age)
    st.one_of(_HANDSHAKE, _PAGE, _CALL, _OTHER),
)


def _page_attributes(event: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = {A.MCP_METHOD_NAME: "tools/list", A.EVIDENCE_ORIGIN: "application"}
    failure = -32602 if event["fail"] else None
    page = Page(
        cursor=event["cursor"], next_cursor=event["next"], failed=event["fail"], error_code=failure
    )
    attrs.update(_codec.encode_page(page))
    if event["cursor"] is None:
        attrs[A.CATALOG_PAGE_INDEX] = 0
    if event["next"] is None and event["digest"] is not None:
        attrs[A.CATALOG_DIGEST] = event["digest"]
    return attrs


_FINDINGS = {
    "ok": None,
    "unknown_tool": Reason.UNKNOWN_TOOL_CALLED,
    "missing_required_argument": Reason.MISSING_REQUIRED_ARGUMENT,
}


def _call_attributes(event: dict[str, Any]) -> dict[str, Any]:
    """Observations as the instrumentation writes them, each through the codec's encoder."""
    attrs = _codec.encode_delivery(event["outcome"], True)
    if event["status"] is not None:
        attrs.update(
            _codec.encode_authorization(AuthorizationEvidence(http_status=event["status"]))
        )
    execution = ExecutionEvidence(is_error=event["is_error"], timed_out=event["timed_out"])
    attrs.update(_codec.encode_execution(execution))
    if event["read_only"] is not None:
        attrs.update(_codec.encode_read_only(event["read_only"]))
    if event["contract"] is not None:
        finding = _FINDINGS[event["contract"]]
        missing = ["title"] if finding == Reason.MISSING_REQUIRED_ARGUMENT else []
        attrs.update(_codec.encode_contract(finding, missing))
    if event["receipt"] is not None:
        result = OutcomeResult(event["receipt"])
        attrs.update(_codec.encode_receipt("destination_query", result, None))
    return attrs


def _server_attributes(server: str | None) -> dict[str, Any]:
    """A handshake's server identity (docs/model.md#scope), or none at all."""
    if server is None:
        return {}
    return {A.SERVER_TARGET_KEY: f"target-{server}", A.SERVER_NAME: f"server-{server}"}


def _emit_event(spans: SessionSpans, at: float, event: dict[str, Any]) -> None:
    kind = event["kind"]
    if kind == "handshake":
        spans.handshake(
            start=at,
            negotiated=event["negotiated"],
            list_changed=event["list_changed"],
            tools=event["tools"],
            **_server_attributes(event["server"]),
        )
    elif kind == "page":
        spans.emit("tools/list", _page_attributes(event), at, at + 0.1)
    elif kind == "call":
        attrs = _call_attributes(event)
        spans.call(event["tool"], ok=False, start=at, end=at + event["duration"], **attrs)
    elif kind == "signal":
        spans.signal(at)
    elif kind == "install":
        if event["digest"] is None:
            spans.emit(A.INSTALL_SPAN_NAME, {A.CATALOG_DIGEST_ERROR: "tool_not_an_object"}, at, at)
        else:
            spans.install(at, event["digest"])
    else:
        spans.end_session(at)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(_EVENT, min_size=1, max_size=25))
def test_a_stream_of_sessions_is_judged_identically(
    events: list[tuple[str, float, dict[str, Any]]],
) -> None:
    def record(recorder: _Recorder) -> None:
        sessions = {key: SessionSpans(recorder.tracer, key=key) for key in ("s1", "s2", "s3")}
        at = -10_000.0
        for key, step, event in events:
            at += step
            _emit_event(sessions[key], at, event)

    _assert_same(record)
