"""From a request's raw observations to its evidence records (core.observations, pure)."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from tests.support.request_reading import decode_request

from otel_mcp_health import _codec
from otel_mcp_health.core.evidence import (
    NOT_APPLICABLE,
    AuthorizationEvidence,
    CallEvidence,
    ExecutionEvidence,
    OutcomeEvidence,
    ProtocolEvidence,
    RequestEvidence,
    TransportEvidence,
)
from otel_mcp_health.core.layers import is_silent
from otel_mcp_health.core.observations import Observed, request_evidence
from otel_mcp_health.core.vocabulary import (
    SILENT_TRANSPORT_OUTCOMES,
    AuthError,
    TransportOutcome,
)

_OPT_BOOL = st.none() | st.booleans()


def test_a_healthy_in_process_call() -> None:
    seen = Observed(method="tools/call", tool_name="lookup", read_only=True, request_id="3")
    seen.transport_outcome, seen.written, seen.is_error = "ok", True, False
    assert request_evidence(seen, network=None) == RequestEvidence(
        call=CallEvidence(
            tool="lookup",
            read_only=True,
            transport=TransportEvidence(outcome=TransportOutcome.OK, request_written=True),
            authorization=NOT_APPLICABLE,  # no network: no authorization exchange
            execution=ExecutionEvidence(is_error=False),
        ),
        request_id="3",
    )


def test_an_http_challenge_is_transport_ok_and_authorization_evidence() -> None:
    seen = Observed(method="tools/call", tool_name="t", http_status=401, written=True)
    seen.transport_outcome, seen.auth_error, seen.auth_scope = "ok", AuthError.INVALID_TOKEN, ("a",)
    seen.error_type = "401"
    built = request_evidence(seen, network="tcp", missing=("x",))
    assert built.call.transport == TransportEvidence(
        outcome=TransportOutcome.OK, http_status=401, request_written=True
    )
    assert built.call.authorization == AuthorizationEvidence(
        http_status=401, error=AuthError.INVALID_TOKEN, scope=("a",)
    )
    assert built.call.missing == ("x",)
    assert built.error_type == "401"
    assert request_evidence(Observed(method="ping"), network="tcp").call.authorization is None


def test_a_cancellation_before_the_write_keeps_the_write_without_an_outcome() -> None:
    seen = Observed(method="tools/call", tool_name="t", written=False, cancelled=True)
    built = request_evidence(seen, network="pipe")
    assert built.call.transport is None
    assert (built.request_written, built.cancelled) == (False, True)
    assert built.call.authorization is NOT_APPLICABLE


def test_protocol_and_execution_come_from_their_own_observations() -> None:
    seen = Observed(method="tools/list", tool_name="ignored", error_code=-32602)
    built = request_evidence(seen, network=None)
    assert built.call.tool is None  # only a tools/call names a tool
    assert built.call.protocol == ProtocolEvidence(error_code=-32602)
    assert built.call.execution is None
    seen = Observed(method="tools/call", timed_out=True, output_schema_valid=False)
    seen.outcome = OutcomeEvidence(method="not_required", passed=None)
    built = request_evidence(seen, network=None)
    assert built.call.execution == ExecutionEvidence(timed_out=True, output_schema_valid=False)
    assert built.call.outcome == seen.outcome
    assert built.call.protocol is None


@st.composite
def observations(draw: st.DrawFn) -> Observed:
    seen = Observed(method=draw(st.sampled_from(["tools/call", "tools/list", "initialize"])))
    seen.tool_name = draw(st.none() | st.text(max_size=5))
    seen.read_only = draw(_OPT_BOOL)
    seen.request_id = draw(st.none() | st.text(max_size=5))
    seen.http_status = draw(st.none() | st.integers(100, 599))
    seen.auth_error = draw(st.none() | st.sampled_from(AuthError))
    seen.auth_scope = tuple(draw(st.lists(st.text(max_size=5), max_size=2)))
    outcomes = [o.value for o in TransportOutcome]
    seen.transport_outcome = draw(st.none() | st.sampled_from(outcomes))
    seen.written = draw(_OPT_BOOL)
    seen.error_code = draw(st.none() | st.integers(-33000, 33000))
    seen.result_valid = draw(st.none() | st.just(False))
    seen.is_error = draw(_OPT_BOOL)
    seen.timed_out, seen.cancelled = draw(st.booleans()), draw(st.booleans())
    seen.output_schema_valid = draw(_OPT_BOOL)
    seen.error_type = draw(st.none() | st.text(max_size=5))
    return seen


@given(observations(), st.sampled_from([None, "pipe", "tcp"]))
def test_the_written_evidence_reads_back_as_built(seen: Observed, network: str | None) -> None:
    built = request_evidence(seen, network=network)
    decoded = decode_request(_codec.encode_request(built))
    # The codec's one convention: a result envelope (isError) means the protocol layer answered.
    protocol = built.call.protocol
    if protocol is None and built.call.execution is not None:
        protocol = ProtocolEvidence() if built.call.execution.is_error is not None else None
    expected_call = CallEvidence(**{**_fields(built.call), "protocol": protocol})
    assert decoded == RequestEvidence(**{**_fields(built), "call": expected_call})


@given(observations())
def test_silence_is_a_timeout_or_a_silent_outcome_unless_not_written(seen: Observed) -> None:
    silent_outcome = seen.transport_outcome in {o.value for o in SILENT_TRANSPORT_OUTCOMES}
    expected = seen.timed_out or (silent_outcome and seen.written is not False)
    assert is_silent(request_evidence(seen, network=None).call) is expected


def _fields(record: CallEvidence | RequestEvidence) -> dict[str, Any]:
    return {field.name: getattr(record, field.name) for field in dataclasses.fields(record)}
