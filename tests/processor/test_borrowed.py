"""Borrowed spans: another library's CLIENT span with our evidence is judged, and waits for its
outcome receipt when the instrumentation says one is coming (``mcp_health.receipt.pending``).

The real thing (FastMCP's ``Client`` against real servers, on every SDK line) runs in
``tests/matrix``; here the two orders of arrival, the bound and the flush are pinned down.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Link, SpanKind
from tests.support.processor_helpers import Pipeline, SessionSpans, at

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.evidence import OutcomeEvidence
from otel_mcp_health.processor import _held

RECEIPT = _codec.encode_outcome(OutcomeEvidence(method="destination_query", passed=True))


def _borrowed_call(pipeline: Pipeline, spans: SessionSpans, **extra: Any) -> Any:
    """A converged session, then FastMCP's own span for a clean ``tools/call`` (ended)."""
    spans.converged()
    attrs = {**spans.base, **spans.call_attributes("create_ticket"), **extra}
    tracer = pipeline.provider.get_tracer("fastmcp")
    return tracer.start_span(
        "tools/call create_ticket", kind=SpanKind.CLIENT, attributes=attrs, start_time=at(-1)
    )


def _receipt(pipeline: Pipeline, spans: SessionSpans, call: Any) -> None:
    pipeline.tracer.start_span(
        A.OUTCOME_SPAN_NAME,
        kind=SpanKind.INTERNAL,
        attributes={A.SESSION_KEY: spans.key, **RECEIPT},
        links=[Link(call.get_span_context())],
        start_time=at(0),
    ).end(end_time=at(0.5))


def _call(pipeline: Pipeline) -> ReadableSpan:
    (call,) = pipeline.named("tools/call create_ticket")
    return call


def _verdict(span: ReadableSpan) -> tuple[Any, ...]:
    attrs = span.attributes or {}
    return attrs.get(A.VERDICT), attrs.get(A.REASON)


def test_a_borrowed_span_without_a_receipt_coming_is_judged_at_its_end(
    pipeline: Pipeline,
) -> None:
    spans = SessionSpans(pipeline.tracer)
    _borrowed_call(pipeline, spans).end(end_time=at(0))
    assert _call(pipeline).instrumentation_scope.name == "fastmcp"
    assert _verdict(_call(pipeline)) == ("unverified", "no_outcome_verifier")


@pytest.mark.parametrize("receipt_first", [False, True], ids=["call-first", "receipt-first"])
def test_a_borrowed_call_is_judged_once_with_its_receipt(
    pipeline: Pipeline, receipt_first: bool
) -> None:
    spans = SessionSpans(pipeline.tracer)
    call = _borrowed_call(pipeline, spans, **{A.OUTCOME_PENDING: True})
    if receipt_first:
        _receipt(pipeline, spans, call)
        call.end(end_time=at(0))
    else:
        call.end(end_time=at(0))
        assert pipeline.named("tools/call") == []  # held until its receipt
        _receipt(pipeline, spans, call)
    exported = _call(pipeline)
    assert _verdict(exported) == ("healthy", "ok")
    attrs = exported.attributes or {}
    assert attrs[A.OUTCOME_RESULT] == "passed"
    assert A.OUTCOME_PENDING not in attrs
    assert pipeline.counts(A.METRIC_CALLS, A.VERDICT) == {"healthy": 1}


def test_a_flush_releases_held_calls_without_their_receipt(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    _borrowed_call(pipeline, spans, **{A.OUTCOME_PENDING: True}).end(end_time=at(0))
    assert pipeline.processor.force_flush()
    assert _verdict(_call(pipeline)) == ("unverified", "no_outcome_verifier")


def test_held_calls_are_bounded(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_held, "MAX_HELD", 0)
    spans = SessionSpans(pipeline.tracer)
    _borrowed_call(pipeline, spans, **{A.OUTCOME_PENDING: True}).end(end_time=at(0))
    assert _verdict(_call(pipeline)) == ("unverified", "no_outcome_verifier")


def test_a_session_that_ends_before_the_receipt_keeps_its_facts_for_the_held_call(
    pipeline: Pipeline,
) -> None:
    """FastMCP ends its span when the call returns, and an agent run may close the session before
    a slow verifier answers: the held call is still judged against its session's discovery."""
    spans = SessionSpans(pipeline.tracer)
    call = _borrowed_call(pipeline, spans, **{A.OUTCOME_PENDING: True})
    call.end(end_time=at(0))
    spans.end_session(0.1)
    _receipt(pipeline, spans, call)
    assert _verdict(_call(pipeline)) == ("healthy", "ok")
    assert pipeline.counts(A.METRIC_CALLS, A.VERDICT) == {"healthy": 1}
