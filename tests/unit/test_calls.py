"""The five-layer call test (SPEC §4) and the contract's call rows (SPEC §5)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from otel_mcp_health.core.calls import classify_call
from otel_mcp_health.core.evidence import (
    NOT_APPLICABLE,
    AuthorizationEvidence,
    CallEvidence,
    EffectEvidence,
    ExecutionEvidence,
    OutcomeEvidence,
    ProtocolEvidence,
    TransportEvidence,
)
from otel_mcp_health.core.layers import LAYER_CHECKS, evaluate_layers
from otel_mcp_health.core.vocabulary import (
    AuthError,
    FirstFailedLayer,
    Layer,
    LayerStatus,
    NextAction,
    TransportOutcome,
    Verdict,
)

OK_T = TransportEvidence(outcome=TransportOutcome.OK, http_status=200, request_written=True)
OK_A = AuthorizationEvidence(http_status=200)
OK_P = ProtocolEvidence(error_code=None)
OK_E = ExecutionEvidence(is_error=False, output_schema_valid=True)
RECEIPT = OutcomeEvidence(method="file_digest", passed=True)
GOOD = CallEvidence(
    tool="t",
    read_only=False,
    transport=OK_T,
    authorization=OK_A,
    protocol=OK_P,
    execution=OK_E,
    outcome=RECEIPT,
)


def with_(**kw: Any) -> CallEvidence:
    return dataclasses.replace(GOOD, **kw)


def transport(
    outcome: TransportOutcome, status: int | None = None, written: bool | None = True
) -> TransportEvidence:
    return TransportEvidence(outcome=outcome, http_status=status, request_written=written)


TIMEOUT = ExecutionEvidence(is_error=None, timed_out=True)
# (id, evidence, first failed layer, verdict, next action, reason)
CASES: list[tuple[str, CallEvidence, str, Verdict, NextAction, str]] = [
    ("healthy", GOOD, "none", Verdict.HEALTHY, NextAction.NONE, "ok"),
    (
        "healthy-stdio",
        with_(authorization=NOT_APPLICABLE),
        "none",
        Verdict.HEALTHY,
        NextAction.NONE,
        "ok",
    ),
    (
        "healthy-by-policy",
        with_(outcome=OutcomeEvidence(method="not_required", passed=None)),
        "none",
        Verdict.HEALTHY,
        NextAction.NONE,
        "outcome_not_required",
    ),
    (
        "unverified",
        with_(outcome=None),
        "none",
        Verdict.UNVERIFIED,
        NextAction.ADD_OUTCOME_VERIFIER,
        "no_outcome_verifier",
    ),
    (
        "inconclusive-verifier",
        with_(outcome=OutcomeEvidence(method="http_status", passed=None)),
        "none",
        Verdict.UNVERIFIED,
        NextAction.ADD_OUTCOME_VERIFIER,
        "verifier_inconclusive",
    ),
    (
        "auth-unobserved-is-not-green",
        with_(authorization=None),
        "none",
        Verdict.UNVERIFIED,
        NextAction.ADD_OUTCOME_VERIFIER,
        "ok",
    ),
    (
        "dns",
        with_(transport=transport(TransportOutcome.DNS_FAILURE, written=False)),
        "transport",
        Verdict.TRANSPORT_ERROR,
        NextAction.RETRY_WITHIN_BUDGET,
        "dns_failure",
    ),
    (
        "refused",
        with_(transport=transport(TransportOutcome.CONNECTION_REFUSED, written=False)),
        "transport",
        Verdict.TRANSPORT_ERROR,
        NextAction.RETRY_WITHIN_BUDGET,
        "connection_refused",
    ),
    (
        "tls",
        with_(transport=transport(TransportOutcome.TLS_FAILURE, written=False)),
        "transport",
        Verdict.TRANSPORT_ERROR,
        NextAction.RETRY_WITHIN_BUDGET,
        "tls_failure",
    ),
    (
        "http-503",
        with_(transport=transport(TransportOutcome.HTTP_ERROR, 503)),
        "transport",
        Verdict.TRANSPORT_ERROR,
        NextAction.RETRY_WITHIN_BUDGET,
        "http_503",
    ),
    (
        "ok-but-500",
        with_(transport=transport(TransportOutcome.OK, 500)),
        "transport",
        Verdict.TRANSPORT_ERROR,
        NextAction.RETRY_WITHIN_BUDGET,
        "http_500",
    ),
    (
        "http-404",
        with_(transport=transport(TransportOutcome.HTTP_ERROR, 404)),
        "transport",
        Verdict.TRANSPORT_ERROR,
        NextAction.RETRY_WITHIN_BUDGET,
        "http_404",
    ),
    (
        "lost-after-write-side-effect",
        with_(transport=transport(TransportOutcome.CONNECTION_LOST), execution=None, protocol=None),
        "transport",
        Verdict.EFFECT_UNKNOWN,
        NextAction.RECONCILE_BEFORE_RETRY,
        "connection_lost",
    ),
    (
        "process-exit-unknown-write",
        with_(transport=transport(TransportOutcome.PROCESS_EXIT, written=None), execution=None),
        "transport",
        Verdict.EFFECT_UNKNOWN,
        NextAction.RECONCILE_BEFORE_RETRY,
        "process_exit",
    ),
    (
        "reset-never-written",
        with_(transport=transport(TransportOutcome.CONNECTION_RESET, written=False)),
        "transport",
        Verdict.TRANSPORT_ERROR,
        NextAction.RETRY_WITHIN_BUDGET,
        "connection_reset",
    ),
    (
        "lost-read-only",
        with_(read_only=True, transport=transport(TransportOutcome.CONNECTION_LOST)),
        "transport",
        Verdict.TRANSPORT_ERROR,
        NextAction.RETRY_WITHIN_BUDGET,
        "connection_lost",
    ),
    (
        "401",
        with_(transport=transport(TransportOutcome.HTTP_ERROR, 401), authorization=None),
        "authorization",
        Verdict.NEEDS_AUTH,
        NextAction.REFRESH_TOKEN_ONCE,
        "http_401",
    ),
    (
        "invalid-token",
        with_(authorization=AuthorizationEvidence(http_status=401, error=AuthError.INVALID_TOKEN)),
        "authorization",
        Verdict.NEEDS_AUTH,
        NextAction.REFRESH_TOKEN_ONCE,
        "invalid_token",
    ),
    (
        "oauth-flow",
        with_(authorization=AuthorizationEvidence(error=AuthError.OAUTH_ERROR)),
        "authorization",
        Verdict.NEEDS_AUTH,
        NextAction.REFRESH_TOKEN_ONCE,
        "oauth_error",
    ),
    (
        "insufficient-scope",
        with_(
            authorization=AuthorizationEvidence(
                http_status=403, error=AuthError.INSUFFICIENT_SCOPE, scope=("tickets:write",)
            )
        ),
        "authorization",
        Verdict.NEEDS_AUTH,
        NextAction.REQUEST_SCOPE,
        "insufficient_scope",
    ),
    (
        "bare-403",
        with_(authorization=AuthorizationEvidence(http_status=403)),
        "authorization",
        Verdict.NEEDS_AUTH,
        NextAction.REQUEST_SCOPE,
        "http_403",
    ),
    (
        "-32601",
        with_(protocol=ProtocolEvidence(error_code=-32601)),
        "protocol",
        Verdict.PROTOCOL_ERROR,
        NextAction.BOUNDED_REDISCOVERY,
        "jsonrpc_-32601",
    ),
    (
        "-32602",
        with_(protocol=ProtocolEvidence(error_code=-32602)),
        "protocol",
        Verdict.PROTOCOL_ERROR,
        NextAction.FIX_REQUEST_CONTRACT,
        "jsonrpc_-32602",
    ),
    (
        "-32022",
        with_(protocol=ProtocolEvidence(error_code=-32022)),
        "protocol",
        Verdict.INCOMPATIBLE_SESSION,
        NextAction.ALIGN_PROTOCOL_VERSION,
        "jsonrpc_-32022",
    ),
    (
        "bad-result-schema",
        with_(protocol=ProtocolEvidence(result_valid=False)),
        "protocol",
        Verdict.PROTOCOL_ERROR,
        NextAction.FIX_REQUEST_CONTRACT,
        "result_schema_violation",
    ),
    (
        "is-error",
        with_(execution=ExecutionEvidence(is_error=True)),
        "execution",
        Verdict.TOOL_FAILED,
        NextAction.INSPECT_TOOL,
        "is_error",
    ),
    (
        "output-schema",
        with_(execution=ExecutionEvidence(is_error=False, output_schema_valid=False)),
        "execution",
        Verdict.TOOL_FAILED,
        NextAction.INSPECT_TOOL,
        "output_schema_violation",
    ),
    (
        "timeout-side-effect",
        with_(execution=TIMEOUT),
        "execution",
        Verdict.EFFECT_UNKNOWN,
        NextAction.RECONCILE_BEFORE_RETRY,
        "timeout",
    ),
    (
        "timeout-read-only",
        with_(execution=TIMEOUT, read_only=True),
        "execution",
        Verdict.TOOL_FAILED,
        NextAction.INSPECT_TOOL,
        "timeout",
    ),
    (
        "reconciled-absent",
        with_(execution=TIMEOUT, effect=EffectEvidence(observed=False, method="destination_query")),
        "execution",
        Verdict.TOOL_FAILED,
        NextAction.RETRY_WITHIN_BUDGET,
        "effect_absent",
    ),
    (
        "reconciled-absent-after-lost-connection",
        with_(
            transport=transport(TransportOutcome.CONNECTION_LOST),
            effect=EffectEvidence(observed=False, method="idempotency_key"),
        ),
        "transport",
        Verdict.TOOL_FAILED,
        NextAction.RETRY_WITHIN_BUDGET,
        "effect_absent",
    ),
    (
        "reconciled-present-verified",
        with_(execution=TIMEOUT, effect=EffectEvidence(observed=True, method="destination_query")),
        "none",
        Verdict.HEALTHY,
        NextAction.NONE,
        "effect_confirmed",
    ),
    (
        "reconciled-present-lost-connection-no-verifier",
        with_(
            transport=transport(TransportOutcome.CONNECTION_LOST),
            execution=None,
            outcome=None,
            effect=EffectEvidence(observed=True, method="destination_query"),
        ),
        "none",
        Verdict.UNVERIFIED,
        NextAction.ADD_OUTCOME_VERIFIER,
        "no_outcome_verifier",
    ),
    (
        "reconciled-present-auth-unobserved-verified",
        with_(
            execution=TIMEOUT,
            authorization=None,
            effect=EffectEvidence(observed=True, method="destination_query"),
        ),
        "none",
        Verdict.HEALTHY,
        NextAction.NONE,
        "effect_confirmed",
    ),
    (
        "reconciled-present-verifier-fails",
        with_(
            execution=TIMEOUT,
            effect=EffectEvidence(observed=True, method="destination_query"),
            outcome=OutcomeEvidence(method="file_digest", passed=False),
        ),
        "outcome",
        Verdict.FALSE_SUCCESS,
        NextAction.VERIFY_DESTINATION,
        "verifier_failed",
    ),
    (
        "false-success",
        with_(outcome=OutcomeEvidence(method="sqlite_row", passed=False)),
        "outcome",
        Verdict.FALSE_SUCCESS,
        NextAction.VERIFY_DESTINATION,
        "verifier_failed",
    ),
    (
        "nothing-observed",
        CallEvidence(),
        "none",
        Verdict.UNVERIFIED,
        NextAction.ADD_OUTCOME_VERIFIER,
        "no_outcome_verifier",
    ),
]


@pytest.mark.parametrize(
    ("call", "first", "verdict", "action", "reason"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_call_cases(
    call: CallEvidence, first: str, verdict: Verdict, action: NextAction, reason: str
) -> None:
    result = classify_call(call)
    assert result.first_failed_layer is FirstFailedLayer(first)
    assert (result.verdict, result.next_action, result.reason) == (verdict, action, reason)


@pytest.mark.parametrize("call", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_layers_after_the_first_failure_are_unobserved(call: CallEvidence) -> None:
    result = classify_call(call)
    order = [check.layer for check in LAYER_CHECKS]
    if result.first_failed_layer is FirstFailedLayer.NONE:
        assert LayerStatus.FAILED not in result.layers.values()
        return
    index = order.index(Layer(result.first_failed_layer.value))
    assert result.layers[order[index]] is LayerStatus.FAILED
    assert all(result.layers[layer] is LayerStatus.UNOBSERVED for layer in order[index + 1 :])


def test_dns_failure_leaves_authorization_and_outcome_unobserved_not_failed() -> None:
    result = classify_call(with_(transport=transport(TransportOutcome.DNS_FAILURE, written=False)))
    assert result.layers == {
        Layer.TRANSPORT: LayerStatus.FAILED,
        Layer.AUTHORIZATION: LayerStatus.UNOBSERVED,
        Layer.PROTOCOL: LayerStatus.UNOBSERVED,
        Layer.EXECUTION: LayerStatus.UNOBSERVED,
        Layer.OUTCOME: LayerStatus.UNOBSERVED,
    }


def test_stdio_authorization_is_not_applicable() -> None:
    assert classify_call(with_(authorization=NOT_APPLICABLE)).layers[Layer.AUTHORIZATION] is (
        LayerStatus.NOT_APPLICABLE
    )


def test_effect_unknown_flag_only_while_unreconciled() -> None:
    assert classify_call(with_(execution=TIMEOUT)).effect_unknown is True
    reconciled = with_(execution=TIMEOUT, effect=EffectEvidence(observed=False, method="q"))
    assert classify_call(reconciled).effect_unknown is False
    assert classify_call(with_(execution=TIMEOUT, read_only=True)).effect_unknown is False


def test_envelope_counts_is_error_but_not_timeouts_or_errors() -> None:
    assert classify_call(with_(execution=ExecutionEvidence(is_error=True))).envelope
    assert not classify_call(with_(execution=TIMEOUT)).envelope
    assert not classify_call(with_(protocol=ProtocolEvidence(error_code=-32602))).envelope


def test_not_required_policy_is_not_a_verified_outcome() -> None:
    policy = with_(outcome=OutcomeEvidence(method="not_required", passed=None))
    assert classify_call(policy).verified is False
    assert classify_call(GOOD).verified is True


def test_silence_fact() -> None:
    assert evaluate_layers(with_(execution=TIMEOUT)).silent
    assert not evaluate_layers(GOOD).silent
