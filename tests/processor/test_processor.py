"""The processor as a span processor: forwarding, safety, options, state, incidents, metrics.

Spans are real SDK spans from a real ``TracerProvider``; their evidence attributes are set by hand
(the rules themselves are covered by the core suite and by ``test_parity``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from tests.support.processor_helpers import OTHER_DIGEST, Pipeline, SessionSpans, at

from otel_mcp_health import attributes as A
from otel_mcp_health import environment_variables as env
from otel_mcp_health.processor import McpHealthSpanProcessor
from otel_mcp_health.processor._spans import INSTRUMENTATION_SCOPE


class Recording(SpanProcessor):
    """A downstream processor that remembers every call."""

    def __init__(self, flush_result: bool = True) -> None:
        self.started: list[Span] = []
        self.ending: list[Span] = []
        self.ended: list[ReadableSpan] = []
        self.shutdowns = 0
        self.flushes: list[int] = []
        self.flush_result = flush_result

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        self.started.append(span)

    def _on_ending(self, span: Span) -> None:
        self.ending.append(span)

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span)

    def shutdown(self) -> None:
        self.shutdowns += 1

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self.flushes.append(timeout_millis)
        return self.flush_result


def _provider(processor: SpanProcessor) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(processor)
    return provider


# ----------------------------------------------------------------------------------------------
# Forwarding
# ----------------------------------------------------------------------------------------------
def test_non_mcp_span_is_forwarded_as_the_same_object() -> None:
    sibling, downstream = Recording(), Recording()
    provider = TracerProvider()
    provider.add_span_processor(sibling)  # sees exactly what the SDK hands every processor
    provider.add_span_processor(McpHealthSpanProcessor(downstream))
    with provider.get_tracer("app").start_as_current_span(
        "GET /", attributes={"http.method": "GET"}
    ):
        pass
    assert downstream.started == sibling.started
    assert downstream.ending == sibling.ending
    (ended,) = downstream.ended
    assert ended is sibling.ended[0]


def test_mcp_span_is_forwarded_as_an_enriched_copy(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.converged()
    spans.call()
    exported = pipeline.last("tools/call")
    attrs = exported.attributes or {}
    assert attrs[A.VERDICT] == "unverified"
    assert attrs[A.GEN_AI_TOOL_NAME] == "create_ticket"  # the original evidence is kept
    assert attrs[A.SESSION_KEY] == "session-1"
    assert exported.start_time == at(-1.0)
    assert exported.end_time == at(0.0)
    assert exported.kind is SpanKind.CLIENT
    assert exported.resource.attributes["service.name"] == "agent-under-test"


def test_every_downstream_processor_gets_every_span() -> None:
    first, second = Recording(), Recording()
    processor = McpHealthSpanProcessor([first, second])
    provider = _provider(processor)
    spans = SessionSpans(provider.get_tracer(INSTRUMENTATION_SCOPE))
    spans.converged()
    spans.call()
    assert [s.name for s in first.ended] == [s.name for s in second.ended]
    assert first.ended[-1] is second.ended[-1]
    assert (first.ended[-1].attributes or {})[A.VERDICT] == "unverified"


def test_shutdown_and_force_flush_propagate() -> None:
    first, second = Recording(), Recording(flush_result=False)
    processor = McpHealthSpanProcessor([first, second])
    assert processor.force_flush(1000) is False
    assert len(first.flushes) == len(second.flushes) == 1
    assert 0 <= first.flushes[0] <= 1000
    processor.shutdown()
    processor.shutdown()  # idempotent
    assert first.shutdowns == second.shutdowns == 1


def test_after_shutdown_spans_pass_through_untouched() -> None:
    downstream = Recording()
    processor = McpHealthSpanProcessor(downstream)
    provider = _provider(processor)
    processor.shutdown()
    spans = SessionSpans(provider.get_tracer(INSTRUMENTATION_SCOPE))
    spans.converged()
    spans.call()
    assert A.VERDICT not in (downstream.ended[-1].attributes or {})


# ----------------------------------------------------------------------------------------------
# Host safety and privacy
# ----------------------------------------------------------------------------------------------
def test_a_failure_of_ours_forwards_the_original_span(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(*_: Any) -> dict[str, Any]:
        raise RuntimeError("processor bug")

    monkeypatch.setattr(pipeline.processor._engine, "_route", boom)
    caplog.set_level(logging.DEBUG, logger="otel_mcp_health")
    spans = SessionSpans(pipeline.tracer)
    spans.call()
    exported = pipeline.last("tools/call")
    assert A.VERDICT not in (exported.attributes or {})
    assert exported.attributes[A.GEN_AI_TOOL_NAME] == "create_ticket"  # type: ignore[index]
    assert "deriving verdicts failed" in caplog.text


def test_copy_never_forwards_server_text(pipeline: Pipeline) -> None:
    secret = "unknown ticketId 'T-4242'"
    span = pipeline.tracer.start_span(
        "tools/call lookup",
        kind=SpanKind.CLIENT,
        attributes={
            A.SESSION_KEY: "s",
            A.MCP_METHOD_NAME: "tools/call",
            A.GEN_AI_TOOL_NAME: "lookup",
            A.RPC_RESPONSE_STATUS_CODE: "-32602",
            A.ERROR_TYPE: "-32602",
            A.TRANSPORT_OUTCOME: "ok",
        },
    )
    span.record_exception(ValueError(secret))
    span.set_status(Status(StatusCode.ERROR, secret))
    span.end()
    exported = pipeline.last("tools/call")
    assert exported.status.status_code is StatusCode.ERROR
    assert exported.status.description == "-32602"
    (event,) = [e for e in exported.events if e.name == "exception"]
    assert dict(event.attributes or {}) == {
        "exception.type": "ValueError",
        "exception.escaped": "False",
    }
    assert secret not in exported.to_json()


def test_text_on_an_unjudged_mcp_span_is_sanitized_too(pipeline: Pipeline) -> None:
    span = pipeline.tracer.start_span(
        "prompts/get greet",
        attributes={A.SESSION_KEY: "s", A.MCP_METHOD_NAME: "prompts/get", A.ERROR_TYPE: "-32602"},
    )
    span.set_status(Status(StatusCode.ERROR, "no prompt named 'secret-name'"))
    span.end()
    exported = pipeline.last("prompts/get")
    assert exported.status.description == "-32602"
    assert A.VERDICT not in (exported.attributes or {})


def test_non_mcp_span_text_is_not_touched() -> None:
    downstream = Recording()
    provider = _provider(McpHealthSpanProcessor(downstream))
    span = provider.get_tracer("app").start_span("db")
    span.set_status(Status(StatusCode.ERROR, "app's own description"))
    span.end()
    assert downstream.ended[-1].status.description == "app's own description"


# ----------------------------------------------------------------------------------------------
# Options
# ----------------------------------------------------------------------------------------------
def test_disabled_by_keyword_is_a_pass_through() -> None:
    downstream = Recording()
    provider = _provider(McpHealthSpanProcessor(downstream, enabled=False))
    SessionSpans(provider.get_tracer(INSTRUMENTATION_SCOPE)).call()
    assert A.VERDICT not in (downstream.ended[-1].attributes or {})


def test_options_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env.OTEL_INSTRUMENTATION_MCP_HEALTH_PROCESSOR_ENABLED, "false")
    monkeypatch.setenv(env.OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S, "60")
    monkeypatch.setenv(
        env.OTEL_INSTRUMENTATION_MCP_HEALTH_SUPPORTED_VERSIONS, "2025-06-18, 2025-11-25"
    )
    downstream = Recording()
    provider = _provider(McpHealthSpanProcessor(downstream))
    SessionSpans(provider.get_tracer(INSTRUMENTATION_SCOPE)).call()
    assert A.VERDICT not in (downstream.ended[-1].attributes or {})

    monkeypatch.setenv(env.OTEL_INSTRUMENTATION_MCP_HEALTH_PROCESSOR_ENABLED, "true")
    pipeline = Pipeline.build()
    spans = SessionSpans(pipeline.tracer)
    spans.handshake(negotiated="2025-06-18", list_changed=False)
    spans.traversal([(None, None)], start=-90)  # older than the 60 s max age from the env
    spans.call()
    attrs = pipeline.last("tools/call").attributes or {}
    assert attrs[A.CATALOG_MAX_AGE_S] == 60.0
    assert attrs[A.CATALOG_REASON] == "refresh_overdue"

    pipeline = Pipeline.build()
    spans = SessionSpans(pipeline.tracer)
    spans.handshake(negotiated="2025-03-26")  # published, but not in the configured list
    assert (pipeline.last("initialize").attributes or {})[A.VERDICT] == "incompatible_session"


def test_keyword_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env.OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S, "60")
    pipeline = Pipeline.build(catalog_max_age_s=500)
    spans = SessionSpans(pipeline.tracer)
    spans.converged(start=-400)
    spans.call()
    assert (pipeline.last("tools/call").attributes or {})[A.CATALOG_MAX_AGE_S] == 500.0


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        (env.OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_SESSIONS, "-3"),
        (env.OTEL_INSTRUMENTATION_MCP_HEALTH_SESSION_IDLE_S, "soon"),
        (env.OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S, "0"),
        (env.OTEL_INSTRUMENTATION_MCP_HEALTH_PROCESSOR_ENABLED, "maybe"),
        (env.OTEL_INSTRUMENTATION_MCP_HEALTH_SUPPORTED_VERSIONS, " , "),
    ],
)
def test_an_invalid_environment_value_falls_back_to_the_default(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(variable, value)
    pipeline = Pipeline.build()
    assert variable in caplog.text
    spans = SessionSpans(pipeline.tracer)
    spans.converged()
    spans.call()
    assert (pipeline.last("tools/call").attributes or {})[A.VERDICT] == "unverified"


@pytest.mark.parametrize(
    "options",
    [{"max_sessions": 0}, {"session_idle_s": -1.0}, {"catalog_max_age_s": 0.0}],
)
def test_invalid_keyword_arguments_raise(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be a positive"):
        McpHealthSpanProcessor(Recording(), **options)


# ----------------------------------------------------------------------------------------------
# Handshakes
# ----------------------------------------------------------------------------------------------
def test_a_successful_handshake_gets_no_verdict(pipeline: Pipeline) -> None:
    SessionSpans(pipeline.tracer).handshake()
    assert A.VERDICT not in (pipeline.last("initialize").attributes or {})


def _failed_probe(spans: SessionSpans, **extra: Any) -> None:
    attrs = {
        A.MCP_METHOD_NAME: "server/discover",
        A.SESSION_ERA: "server/discover",
        A.TRANSPORT_OUTCOME: "ok",
        A.HTTP_RESPONSE_STATUS_CODE: 200,
        A.RPC_RESPONSE_STATUS_CODE: "-32601",
    }
    spans.emit("server/discover", {**attrs, **extra}, -130)


def test_a_superseded_discover_probe_is_not_a_failure(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    _failed_probe(spans, **{A.SESSION_SUPERSEDED: True})
    spans.converged()
    spans.call()
    assert A.VERDICT not in (pipeline.last("server/discover").attributes or {})
    assert (pipeline.last("tools/call").attributes or {})[A.VERDICT] == "unverified"
    assert pipeline.counts(A.METRIC_INCIDENTS, A.VERDICT) == {}


def test_a_failed_probe_that_nothing_superseded_is_judged(pipeline: Pipeline) -> None:
    _failed_probe(SessionSpans(pipeline.tracer))
    attrs = pipeline.last("server/discover").attributes or {}
    assert attrs[A.VERDICT] == "protocol_error"
    assert attrs[A.CALL_FIRST_FAILED_LAYER] == "protocol"


def test_a_disjoint_discover_probe_is_incompatible(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.emit(
        "server/discover",
        {
            A.MCP_METHOD_NAME: "server/discover",
            A.SESSION_ERA: "server/discover",
            A.TRANSPORT_OUTCOME: "ok",
            A.HTTP_RESPONSE_STATUS_CODE: 200,
            A.RPC_RESPONSE_STATUS_CODE: "-32022",
        },
        -130,
    )
    attrs = pipeline.last("server/discover").attributes or {}
    assert attrs[A.VERDICT] == "incompatible_session"
    assert attrs[A.NEXT_ACTION] == "align_protocol_version"


def test_calls_of_a_session_without_handshake_evidence_are_never_green(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.traversal([(None, None)], start=-10)
    spans.call(**{A.OUTCOME_METHOD: "file_digest", A.OUTCOME_RESULT: "passed"})
    attrs = pipeline.last("tools/call").attributes or {}
    assert attrs[A.VERDICT] == "unverified"
    assert attrs[A.REASON] == "session_unobserved"


# ----------------------------------------------------------------------------------------------
# needs_auth memory, retries, incidents
# ----------------------------------------------------------------------------------------------
def _unanswered_auth_call(spans: SessionSpans, start: float) -> None:
    """A call whose authorization exchange left no evidence (no HTTP status was observed)."""
    spans.call(
        start=start,
        end=start + 0.1,
        ok=False,
        **{A.TRANSPORT_OUTCOME: "ok", A.CALL_IS_ERROR: False},
    )


def test_needs_auth_holds_until_an_authorized_exchange_succeeds(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.converged()
    spans.call(
        start=-5,
        end=-4.9,
        ok=False,
        **{
            A.TRANSPORT_OUTCOME: "ok",
            A.HTTP_RESPONSE_STATUS_CODE: 401,
            A.AUTH_ERROR: "invalid_token",
        },
    )
    assert (pipeline.last("tools/call").attributes or {})[A.VERDICT] == "needs_auth"
    _unanswered_auth_call(spans, -4)
    attrs = pipeline.last("tools/call").attributes or {}
    assert attrs[A.VERDICT] == "needs_auth"
    assert attrs[A.REASON] == "invalid_token"
    spans.call(start=-3, end=-2.9)  # HTTP 200: an authorized exchange succeeded
    assert (pipeline.last("tools/call").attributes or {})[A.VERDICT] == "unverified"
    _unanswered_auth_call(spans, -2)
    assert (pipeline.last("tools/call").attributes or {})[A.VERDICT] == "unverified"


def test_a_failed_handshake_authorization_carries_to_the_calls(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.emit(
        "initialize",
        {
            A.MCP_METHOD_NAME: "initialize",
            A.TRANSPORT_OUTCOME: "ok",
            A.HTTP_RESPONSE_STATUS_CODE: 403,
            A.AUTH_ERROR: "insufficient_scope",
            A.AUTH_REQUIRED_SCOPES: ["tickets:write"],
        },
        -60,
    )
    attrs = pipeline.last("initialize").attributes or {}
    assert (attrs[A.VERDICT], attrs[A.NEXT_ACTION]) == ("needs_auth", "request_scope")
    assert attrs[A.CALL_FIRST_FAILED_LAYER] == "authorization"
    _unanswered_auth_call(spans, -1)
    assert (pipeline.last("tools/call").attributes or {})[A.VERDICT] == "needs_auth"


#: The server accepted the POST (HTTP 200), then no answer came before the deadline.
_SILENCE = {
    A.TRANSPORT_OUTCOME: "ok",
    A.TRANSPORT_REQUEST_WRITTEN: True,
    A.HTTP_RESPONSE_STATUS_CODE: 200,
    A.CALL_TIMED_OUT: True,
}


def _silent_call(pipeline: Pipeline, spans: SessionSpans, tool: str = "publish") -> ReadableSpan:
    spans.call(tool, start=-10, end=-9, ok=False, **_SILENCE)
    call = pipeline.last("tools/call")
    assert (call.attributes or {})[A.VERDICT] == "effect_unknown"
    assert (call.attributes or {})[A.EFFECT_UNKNOWN] is True
    return call


def _reconcile(
    pipeline: Pipeline, spans: SessionSpans, silent: ReadableSpan | None, **evidence: Any
) -> dict[str, Any]:
    links = [Link(silent.context)] if silent is not None and silent.context is not None else []
    span = pipeline.tracer.start_span(
        A.RECONCILE_SPAN_NAME,
        kind=SpanKind.INTERNAL,
        attributes={A.SESSION_KEY: spans.key, A.GEN_AI_TOOL_NAME: "publish", **evidence},
        links=links,
        start_time=at(-2),
    )
    span.end(end_time=at(-1))
    return dict(pipeline.last(A.RECONCILE_SPAN_NAME).attributes or {})


@pytest.mark.parametrize(
    ("evidence", "expected"),
    [
        ({A.EFFECT_OBSERVED: False}, ("tool_failed", "retry_within_budget", "effect_absent")),
        ({A.EFFECT_OBSERVED: True}, ("unverified", "add_outcome_verifier", "no_outcome_verifier")),
        (
            {A.EFFECT_OBSERVED: True, A.OUTCOME_METHOD: "file_digest", A.OUTCOME_RESULT: "passed"},
            ("healthy", "none", "effect_confirmed"),
        ),
        (
            {A.EFFECT_OBSERVED: True, A.OUTCOME_METHOD: "file_digest", A.OUTCOME_RESULT: "failed"},
            ("false_success", "verify_destination", "verifier_failed"),
        ),
    ],
)
def test_a_reconciliation_judges_the_silent_call_again(
    pipeline: Pipeline, evidence: dict[str, Any], expected: tuple[str, str, str]
) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.converged()
    silent = _silent_call(pipeline, spans)
    spans.end_session(-5)  # reconciliation often comes after the session closed
    found = {A.EFFECT_METHOD: "destination_query", **evidence}
    attrs = _reconcile(pipeline, spans, silent, **found)
    assert (attrs[A.VERDICT], attrs[A.NEXT_ACTION], attrs[A.REASON]) == expected
    assert A.EFFECT_UNKNOWN not in attrs


def test_a_reconciliation_without_its_silent_call_gets_no_verdict(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.converged()
    attrs = _reconcile(pipeline, spans, None, **{A.EFFECT_OBSERVED: False})
    assert A.VERDICT not in attrs
    assert attrs[A.EFFECT_OBSERVED] is False  # the evidence itself is forwarded


def test_the_instrumentation_retry_flag_is_forwarded_untouched(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.converged()
    _silent_call(pipeline, spans)
    spans.call("publish", **{A.RETRY_UNRECONCILED: True})
    assert (pipeline.last("tools/call").attributes or {})[A.RETRY_UNRECONCILED] is True
    spans.call("publish", start=-0.5, end=0)  # other arguments: the instrumentation did not flag
    assert A.RETRY_UNRECONCILED not in (pipeline.last("tools/call").attributes or {})


def test_one_incident_per_key_cleared_by_a_healthy_call(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.converged()
    expired = {
        A.TRANSPORT_OUTCOME: "ok",
        A.HTTP_RESPONSE_STATUS_CODE: 401,
        A.AUTH_ERROR: "invalid_token",
    }
    for n in range(5):
        spans.call(start=-10 + n, end=-9.9 + n, ok=False, **expired)
    keys = {(s.attributes or {})[A.INCIDENT_KEY] for s in pipeline.named("tools/call")}
    assert len(keys) == 1
    assert pipeline.counts(A.METRIC_INCIDENTS, A.CALL_FIRST_FAILED_LAYER) == {"authorization": 1}

    spans.call(start=-4, end=-3.9, **{A.OUTCOME_METHOD: "file_digest", A.OUTCOME_RESULT: "passed"})
    healthy = pipeline.last("tools/call").attributes or {}
    assert healthy[A.VERDICT] == "healthy"
    assert A.INCIDENT_KEY not in healthy
    spans.call(start=-3, end=-2.9, ok=False, **expired)
    assert pipeline.counts(A.METRIC_INCIDENTS, A.CALL_FIRST_FAILED_LAYER) == {"authorization": 2}


def test_the_incident_key_depends_on_service_server_layer_and_reason(pipeline: Pipeline) -> None:
    for key, server in (("s1", ("a.test", 443)), ("s2", ("a.test", 443)), ("s3", ("b.test", 443))):
        spans = SessionSpans(pipeline.tracer, key=key, server=server)
        spans.converged()
        spans.call(
            ok=False, **{A.TRANSPORT_OUTCOME: "http_error", A.HTTP_RESPONSE_STATUS_CODE: 503}
        )
    keys = [(s.attributes or {})[A.INCIDENT_KEY] for s in pipeline.named("tools/call")]
    assert keys[0] == keys[1] != keys[2]
    assert all(len(k) == 16 for k in keys)


# ----------------------------------------------------------------------------------------------
# Catalog spans and metrics
# ----------------------------------------------------------------------------------------------
def test_catalog_verdicts_on_pages_signals_and_installs(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.handshake()
    spans.traversal([(None, "c1"), ("c1", None)], start=-60)
    first, final = pipeline.named("tools/list")
    assert A.CATALOG_VERDICT not in (first.attributes or {})
    assert (final.attributes or {})[A.CATALOG_VERDICT] == "converged"
    spans.signal(-50)
    assert (pipeline.last("notifications").attributes or {})[A.CATALOG_VERDICT] == "stale"
    spans.traversal([(None, None)], start=-40)
    assert (pipeline.last("tools/list").attributes or {})[A.CATALOG_VERDICT] == "converged"
    spans.install(-30, OTHER_DIGEST)
    install = pipeline.last(A.INSTALL_SPAN_NAME).attributes or {}
    assert (install[A.CATALOG_VERDICT], install[A.CATALOG_REASON]) == ("stale", "digest_mismatch")
    assert pipeline.counts(A.METRIC_CATALOG_VERDICTS, A.CATALOG_VERDICT) == {
        "converged": 2,
        "stale": 2,
    }
    (lag,) = pipeline.metric_points(A.METRIC_CONVERGENCE_LAG)
    assert lag["count"] == 1
    assert lag["sum"] == pytest.approx(10.1)  # signal at -50, converged page ended at -39.9


def test_internal_lists_never_count_as_discovery(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.handshake()
    spans.traversal([(None, None)], start=-10, internal=True)
    assert A.CATALOG_VERDICT not in (pipeline.last("tools/list").attributes or {})
    spans.call()
    attrs = pipeline.last("tools/call").attributes or {}
    assert (attrs[A.VERDICT], attrs[A.CATALOG_REASON]) == ("stale_catalog", "no_discovery")


def test_an_unrepresentable_digest_is_unverifiable(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.handshake()
    spans.traversal(
        [(None, None)], start=-10, digest=None, **{A.CATALOG_DIGEST_ERROR: "digest_unrepresentable"}
    )
    spans.emit(  # the digest error sits on the final page
        "tools/list",
        {
            A.MCP_METHOD_NAME: "tools/list",
            A.EVIDENCE_ORIGIN: "application",
            A.CATALOG_PAGE_INDEX: 0,
            A.CATALOG_DIGEST_ERROR: "digest_unrepresentable",
        },
        -5,
    )
    attrs = pipeline.last("tools/list").attributes or {}
    assert (attrs[A.CATALOG_VERDICT], attrs[A.CATALOG_REASON]) == (
        "unverifiable",
        "digest_unrepresentable",
    )


def test_call_metrics_are_labelled_by_verdict_layer_method_tool_and_server(
    pipeline: Pipeline,
) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.converged()
    spans.call("lookup")
    spans.call("fail", ok=False, **{A.TRANSPORT_OUTCOME: "ok", A.CALL_IS_ERROR: True})
    points = pipeline.metric_points(A.METRIC_CALLS)
    labels = sorted(((p["attributes"], p["value"]) for p in points), key=str)
    assert labels == sorted(
        [
            (
                {
                    A.VERDICT: "tool_failed",
                    A.CALL_FIRST_FAILED_LAYER: "execution",
                    A.MCP_METHOD_NAME: "tools/call",
                    A.GEN_AI_TOOL_NAME: "fail",
                    A.SERVER_ADDRESS: "tools.example.test",
                    A.SERVER_PORT: 443,
                },
                1,
            ),
            (
                {
                    A.VERDICT: "unverified",
                    A.CALL_FIRST_FAILED_LAYER: "none",
                    A.MCP_METHOD_NAME: "tools/call",
                    A.GEN_AI_TOOL_NAME: "lookup",
                    A.SERVER_ADDRESS: "tools.example.test",
                    A.SERVER_PORT: 443,
                },
                1,
            ),
        ],
        key=str,
    )


def test_progress_summary_on_the_finished_call(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.converged()
    progress = [
        (
            A.PROGRESS_EVENT,
            {A.PROGRESS_VALUE: 1.0, A.PROGRESS_TOTAL: 3.0, A.PROGRESS_TOKEN_MATCH: True},
            -9,
        ),
        (A.PROGRESS_EVENT, {A.PROGRESS_VALUE: 1.0, A.PROGRESS_TOKEN_MATCH: True}, -8),
        (A.PROGRESS_EVENT, {A.PROGRESS_VALUE: 2.0, A.PROGRESS_TOKEN_MATCH: False}, -7),
        (A.PROGRESS_EVENT, {A.PROGRESS_VALUE: 3.0, A.PROGRESS_TOKEN_MATCH: True}, -4),
    ]
    spans.call(start=-10, end=0, events=progress)
    attrs = pipeline.last("tools/call").attributes or {}
    assert attrs[A.PROGRESS_COUNT] == 4
    assert attrs[A.PROGRESS_VALID_COUNT] == 2
    assert attrs[A.PROGRESS_MONOTONIC] is False
    assert attrs[A.PROGRESS_WRONG_TOKEN_COUNT] == 1
    assert attrs[A.PROGRESS_LATE_COUNT] == 0
    assert attrs[A.PROGRESS_MAX_GAP_S] == pytest.approx(3.0)


# ----------------------------------------------------------------------------------------------
# The live gauge
# ----------------------------------------------------------------------------------------------
def _live_call(pipeline: Pipeline, key: str, started_s_ago: float, **attrs: Any) -> Span:
    span = pipeline.tracer.start_span(
        "tools/call slow",
        kind=SpanKind.CLIENT,
        start_time=time.time_ns() - round(started_s_ago * 1e9),
        attributes={
            A.SESSION_KEY: key,
            A.MCP_METHOD_NAME: "tools/call",
            A.CALL_IDLE_WINDOW_S: 30.0,
            A.CALL_DEADLINE_S: 600.0,
            **attrs,
        },
    )
    assert isinstance(span, Span)
    return span


def _gauge(pipeline: Pipeline) -> dict[str, int]:
    return {
        p["attributes"][A.LIVE_STATE]: p["value"]
        for p in pipeline.metric_points(A.METRIC_CALLS_IN_FLIGHT)
    }


def test_in_flight_calls_by_live_state(pipeline: Pipeline) -> None:
    working = _live_call(pipeline, "a", 1)
    stalled = _live_call(pipeline, "b", 100)  # no progress for longer than the idle window
    kept_alive = _live_call(pipeline, "c", 100)
    kept_alive.add_event(A.PROGRESS_EVENT, {A.PROGRESS_VALUE: 1.0, A.PROGRESS_TOKEN_MATCH: True})
    waiting = _live_call(pipeline, "d", 100, **{A.CALL_WAITING_FOR_USER: True})
    assert _gauge(pipeline) == {"working": 2, "stalled": 1, "waiting_for_user": 1}
    for span in (working, stalled, kept_alive, waiting):
        span.end()
    assert _gauge(pipeline) == {"working": 0, "stalled": 0, "waiting_for_user": 0}


# ----------------------------------------------------------------------------------------------
# Bounded state
# ----------------------------------------------------------------------------------------------
def _sessions(processor: McpHealthSpanProcessor) -> int:
    return len(processor._sessions)


def test_a_session_end_span_releases_the_state(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.converged()
    assert _sessions(pipeline.processor) == 1
    spans.end_session(1)
    assert _sessions(pipeline.processor) == 0
    assert pipeline.last(A.SESSION_END_SPAN_NAME).attributes[A.SESSION_KEY] == "session-1"  # type: ignore[index]


def test_idle_sessions_expire_and_the_cap_evicts_the_least_recent() -> None:
    pipeline = Pipeline.build(max_sessions=3, session_idle_s=60)
    for n in range(5):
        SessionSpans(pipeline.tracer, key=f"s{n}").handshake(start=n)
    assert _sessions(pipeline.processor) == 3
    SessionSpans(pipeline.tracer, key="late").handshake(start=500)
    assert _sessions(pipeline.processor) == 1


_RESOURCE = Resource.create({"service.name": "memory-test"})
_SCOPE = InstrumentationScope(INSTRUMENTATION_SCOPE)


def _short_session(key: str, start: float) -> Sequence[ReadableSpan]:
    """A handshake and one call: the whole life of a short session, as the SDK hands it over."""
    base = {A.SESSION_KEY: key, A.NETWORK_TRANSPORT: "pipe"}
    return [
        ReadableSpan(
            name="initialize",
            attributes={
                **base,
                A.MCP_METHOD_NAME: "initialize",
                A.MCP_PROTOCOL_VERSION: "2025-11-25",
                A.SESSION_CAPABILITY_TOOLS: True,
                A.SESSION_CAPABILITY_TOOLS_LIST_CHANGED: True,
                A.TRANSPORT_OUTCOME: "ok",
            },
            resource=_RESOURCE,
            instrumentation_scope=_SCOPE,
            start_time=at(start),
            end_time=at(start + 0.001),
        ),
        ReadableSpan(
            name="tools/call t",
            attributes={
                **base,
                A.MCP_METHOD_NAME: "tools/call",
                A.GEN_AI_TOOL_NAME: "t",
                A.TRANSPORT_OUTCOME: "ok",
                A.CALL_IS_ERROR: False,
            },
            resource=_RESOURCE,
            instrumentation_scope=_SCOPE,
            start_time=at(start + 0.002),
            end_time=at(start + 0.003),
        ),
    ]


def _retained(processor: McpHealthSpanProcessor, first: int, count: int) -> int:
    """Bytes still allocated after feeding sessions ``first .. first + count`` (traced)."""
    import gc
    import tracemalloc

    sessions = [_short_session(f"k{n}", n * 0.01) for n in range(first, first + count)]
    gc.collect()
    tracemalloc.start()
    try:
        for session in sessions:
            for span in session:
                processor.on_end(span)
        del sessions
        gc.collect()
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_memory_stays_flat_with_100000_short_sessions() -> None:
    cap = 1000
    # What ``cap`` sessions cost, measured on a fresh processor.
    full = _retained(McpHealthSpanProcessor(SpanProcessor(), max_sessions=cap), 0, cap)
    processor = McpHealthSpanProcessor(SpanProcessor(), max_sessions=cap)
    for n in range(90_000):
        for span in _short_session(f"k{n}", n * 0.01):
            processor.on_end(span)
    # The last 10,000 of 100,000 sessions: only ``cap`` of them may still be held.
    late = _retained(processor, 90_000, 10_000)
    assert _sessions(processor) == cap
    assert late < 1.5 * full, (late, full)


def test_the_scope_is_the_instrumentation_tracer_name() -> None:
    from otel_mcp_health import instrumentation

    assert instrumentation.__name__ == INSTRUMENTATION_SCOPE


def test_a_client_span_of_another_scope_with_our_evidence_is_judged() -> None:
    """Spans are recognised by their evidence (our session key), not their scope: a higher-level
    client's own CLIENT span that the instrumentation enriched is judged like ours."""
    downstream = Recording()
    provider = _provider(McpHealthSpanProcessor(downstream))
    SessionSpans(provider.get_tracer("someone.else")).call()
    assert downstream.ended[-1].kind is SpanKind.CLIENT
    assert (downstream.ended[-1].attributes or {})[A.VERDICT] == "stale_catalog"


def test_other_spans_of_another_scope_are_not_judged() -> None:
    downstream = Recording()
    provider = _provider(McpHealthSpanProcessor(downstream))
    tracer = provider.get_tracer("someone.else")
    tracer.start_span("no evidence", kind=SpanKind.CLIENT, attributes={"x": 1}).end()
    # our attributes on a non-CLIENT span of another scope: never ours to judge
    tracer.start_span("tools/call x", kind=SpanKind.INTERNAL, attributes={A.SESSION_KEY: "k"}).end()
    assert all(A.VERDICT not in (span.attributes or {}) for span in downstream.ended)


def test_open_incidents_are_bounded() -> None:
    from otel_mcp_health.processor._incidents import Incidents

    incidents = Incidents(capacity=2)
    assert [incidents.open(k, "srv") for k in ("a", "b", "a", "c")] == [1, 1, 2, 1]
    assert incidents.open("b", "srv") == 1  # the least recently seen key was evicted
    incidents.clear_server("srv")
    assert incidents.open("a", "srv") == 1


@pytest.mark.parametrize(
    "odd",
    [
        {A.TRANSPORT_OUTCOME: "carrier_pigeon"},
        {A.AUTH_ERROR: "made_up", A.HTTP_RESPONSE_STATUS_CODE: "not-a-number"},
        {A.RPC_RESPONSE_STATUS_CODE: "x"},
    ],
)
def test_unknown_evidence_values_are_never_green(pipeline: Pipeline, odd: dict[str, Any]) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.converged()
    spans.call(**{A.OUTCOME_METHOD: "file_digest", A.OUTCOME_RESULT: "passed"}, **odd)
    assert (pipeline.last("tools/call").attributes or {})[A.VERDICT] != "healthy"


def test_a_call_span_that_ends_after_its_session_is_judged_in_it(pipeline: Pipeline) -> None:
    """The span of a call waiting for its outcome receipt may end after ``session.end``."""
    spans = SessionSpans(pipeline.tracer)
    spans.converged()
    open_call = pipeline.tracer.start_span(
        "tools/call create_ticket",
        kind=SpanKind.CLIENT,
        start_time=at(-2),
        attributes={
            **spans.base,
            A.MCP_METHOD_NAME: "tools/call",
            A.GEN_AI_TOOL_NAME: "create_ticket",
            A.TRANSPORT_OUTCOME: "ok",
            A.HTTP_RESPONSE_STATUS_CODE: 200,
            A.CALL_IS_ERROR: False,
        },
    )
    spans.end_session(-1)
    assert _sessions(pipeline.processor) == 1  # held for the open call
    open_call.set_attributes({A.OUTCOME_METHOD: "file_digest", A.OUTCOME_RESULT: "passed"})
    open_call.end(end_time=at(0))
    assert (pipeline.last("tools/call").attributes or {})[A.VERDICT] == "healthy"
    assert _sessions(pipeline.processor) == 0


def test_leaked_client_spans_of_other_libraries_never_crowd_out_our_calls(
    pipeline: Pipeline,
) -> None:
    """Another library's CLIENT span is tracked while open (our instrumentation may enrich it);
    an application that never ends such spans fills at most part of the bounded map."""
    from otel_mcp_health.processor import _inflight

    other = pipeline.provider.get_tracer("someone.else")
    leaked = [other.start_span("GET", kind=SpanKind.CLIENT) for _ in range(_inflight.MAX_LIVE + 10)]
    assert len(pipeline.processor._inflight) == _inflight.MAX_FOREIGN
    ours = _live_call(pipeline, "ours", 1)
    assert _gauge(pipeline) == {"working": 1, "stalled": 0, "waiting_for_user": 0}
    ours.end()
    for span in leaked:
        span.end()
    assert not pipeline.processor._inflight
