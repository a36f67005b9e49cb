"""The five-layer call test (docs/model.md#layers): where did this tool call stop?

Layers are checked in order: **transport → authorization → protocol → execution → outcome**.
Each layer is judged by one row of :data:`LAYER_CHECKS` from the evidence alone (``passed``,
``failed``, ``unobserved`` or ``not_applicable``); then the first failed layer is named and every
later layer becomes ``unobserved`` (never ``failed``: an early break must not inflate incidents).

Authorization comes before protocol: on HTTP the challenge precedes any JSON-RPC exchange
(docs/model.md#layers). A status that is an authorization
challenge (401/403) therefore passes the transport layer and fails the authorization layer.

*Silence* (docs/model.md#contract) is a fact computed here too: a timeout, or a lost connection,
reset or process exit after the request may have been written (unknown counts as "may have").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from otel_mcp_health.core.evidence import NOT_APPLICABLE, CallEvidence
from otel_mcp_health.core.reasons import Reason
from otel_mcp_health.core.vocabulary import (
    AUTH_CHALLENGE_STATUSES,
    LAYERS,
    METHOD_NOT_FOUND,
    OUTCOME_NOT_REQUIRED,
    SILENT_TRANSPORT_OUTCOMES,
    AuthError,
    FirstFailedLayer,
    Layer,
    LayerStatus,
    NextAction,
    TransportOutcome,
)


@dataclass(frozen=True, slots=True)
class LayerJudgement:
    """One layer's status, with the reason code and next action when it failed."""

    status: LayerStatus
    reason: str | None = None
    next_action: NextAction | None = None


_PASSED = LayerJudgement(LayerStatus.PASSED)
_UNOBSERVED = LayerJudgement(LayerStatus.UNOBSERVED)
_FAILED = LayerJudgement(LayerStatus.FAILED)


def _failed(reason: str, action: NextAction) -> LayerJudgement:
    return LayerJudgement(LayerStatus.FAILED, reason, action)


def _transport(call: CallEvidence) -> LayerJudgement:
    t = call.transport
    if t is None:
        return _UNOBSERVED
    status = t.http_status
    if t.outcome is TransportOutcome.OK:
        if status is not None and status >= 500:
            return _failed(f"http_{status}", NextAction.RETRY_WITHIN_BUDGET)
        return _PASSED
    if t.outcome is TransportOutcome.HTTP_ERROR:
        if status in AUTH_CHALLENGE_STATUSES:
            return _PASSED  # the server answered; the authorization layer judges the challenge
        reason = f"http_{status}" if status is not None else t.outcome.value
        return _failed(reason, NextAction.RETRY_WITHIN_BUDGET)
    return _failed(t.outcome.value, NextAction.RETRY_WITHIN_BUDGET)


def _authorization(call: CallEvidence) -> LayerJudgement:
    a = call.authorization
    if a is NOT_APPLICABLE:
        return LayerJudgement(LayerStatus.NOT_APPLICABLE)
    status = a.http_status if a is not None else None
    error = a.error if a is not None else None
    if (
        status is None
        and call.transport is not None
        and call.transport.outcome is (TransportOutcome.HTTP_ERROR)
    ):
        status = call.transport.http_status
    if error is AuthError.INSUFFICIENT_SCOPE or (error is None and status == 403):
        return _failed(error.value if error else "http_403", NextAction.REQUEST_SCOPE)
    if error is not None:
        return _failed(error.value, NextAction.REFRESH_TOKEN_ONCE)
    if status == 401:
        return _failed("http_401", NextAction.REFRESH_TOKEN_ONCE)
    if status is not None and status < 400:
        return _PASSED
    return _UNOBSERVED


def _protocol(call: CallEvidence) -> LayerJudgement:
    p = call.protocol
    if p is None:
        return _UNOBSERVED
    if call.execution is not None and call.execution.timed_out:
        # No response arrived: there is no envelope to judge (a code next to a timeout is the
        # one the SDK made up for it, e.g. on a span another client library traced).
        return _UNOBSERVED
    if p.error_code is not None:
        action = (
            NextAction.BOUNDED_REDISCOVERY
            if p.error_code == METHOD_NOT_FOUND
            else NextAction.FIX_REQUEST_CONTRACT
        )
        return _failed(f"jsonrpc_{p.error_code}", action)
    if p.result_valid is False:
        return _failed(Reason.RESULT_SCHEMA_VIOLATION, NextAction.FIX_REQUEST_CONTRACT)
    return _PASSED


def _execution(call: CallEvidence) -> LayerJudgement:
    e = call.execution
    if e is None:
        return _UNOBSERVED
    if e.timed_out:
        return _failed(Reason.TIMEOUT, NextAction.INSPECT_TOOL)
    if e.is_error is True:
        return _failed(Reason.IS_ERROR, NextAction.INSPECT_TOOL)
    if e.output_schema_valid is False:
        return _failed(Reason.OUTPUT_SCHEMA_VIOLATION, NextAction.INSPECT_TOOL)
    if e.is_error is False:
        return _PASSED
    return _UNOBSERVED


def _outcome(call: CallEvidence) -> LayerJudgement:
    o = call.outcome
    if o is None:
        return LayerJudgement(LayerStatus.UNOBSERVED, Reason.NO_OUTCOME_VERIFIER)
    if o.method == OUTCOME_NOT_REQUIRED:
        return LayerJudgement(LayerStatus.PASSED, Reason.OUTCOME_NOT_REQUIRED)
    if o.passed is True:
        return _PASSED
    if o.passed is False:
        return _failed(Reason.VERIFIER_FAILED, NextAction.VERIFY_DESTINATION)
    return LayerJudgement(LayerStatus.UNOBSERVED, Reason.VERIFIER_INCONCLUSIVE)


@dataclass(frozen=True, slots=True)
class LayerCheck:
    """One row of the layer table: which layer, what fails it, what to do next."""

    layer: Layer
    fails_on: str
    next_action: str
    judge: Callable[[CallEvidence], LayerJudgement]


LAYER_CHECKS: tuple[LayerCheck, ...] = (
    LayerCheck(
        Layer.TRANSPORT,
        "DNS failure, connection refused/reset, TLS failure, HTTP 5xx or another non-auth "
        "error status, process exit, connection lost",
        "`retry_within_budget` (silence after a write: see `effect_unknown`)",
        _transport,
    ),
    LayerCheck(
        Layer.AUTHORIZATION,
        "HTTP 401 / `invalid_token`, OAuth flow errors; HTTP 403 / `insufficient_scope`; "
        "`null` evidence (stdio) is `not_applicable`",
        "`refresh_token_once`; `request_scope` for insufficient scope",
        _authorization,
    ),
    LayerCheck(
        Layer.PROTOCOL,
        "a JSON-RPC error response; a result that violates the negotiated schema",
        "`bounded_rediscovery` for -32601, else `fix_request_contract`",
        _protocol,
    ),
    LayerCheck(
        Layer.EXECUTION,
        "`isError: true`, no response by the deadline, `structuredContent` violating "
        "the tool's `outputSchema`",
        "`inspect_tool`",
        _execution,
    ),
    LayerCheck(
        Layer.OUTCOME,
        "the outcome verifier chosen before the call says the artefact is absent or wrong "
        "(no verifier → `unobserved`; policy `not_required` → passed)",
        "`verify_destination`",
        _outcome,
    ),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CallLayers:
    """The five layer statuses after first-failure masking, plus the facts the contract needs."""

    statuses: Mapping[Layer, LayerStatus]
    first_failed: FirstFailedLayer
    reason: str
    next_action: NextAction | None
    silent: bool
    side_effecting: bool
    reconciled: bool | None
    #: The recorder could not gather some evidence: whatever passed, the call is not ``healthy``.
    evidence_missing: bool = False

    @property
    def envelope(self) -> bool:
        """Protocol-level success: a JSON-RPC result envelope arrived."""
        return self.statuses[Layer.PROTOCOL] is LayerStatus.PASSED

    @property
    def failed(self) -> bool:
        """Whether any layer failed."""
        return self.first_failed is not FirstFailedLayer.NONE


def is_silent(call: CallEvidence) -> bool:
    """Whether the request may have been written and no answer came (docs/model.md#contract)."""
    if call.execution is not None and call.execution.timed_out:
        return True
    t = call.transport
    return (
        t is not None and t.outcome in SILENT_TRANSPORT_OUTCOMES and t.request_written is not False
    )


def evaluate_layers(call: CallEvidence) -> CallLayers:
    """Judge each layer, name the first failed one, mask the later ones as ``unobserved``.

    When reconciliation confirmed that a silent call's side effect happened, the silence is not a
    failure of the tool: the layer that went silent counts as ``passed`` (reason
    ``effect_confirmed``), so does an authorization exchange nobody observed (the server accepted
    the request: it acted on it), and the outcome verifier judges the call like a completed one.
    """
    judgements = {check.layer: check.judge(call) for check in LAYER_CHECKS}
    silent = is_silent(call)
    reconciled = call.effect.observed if (silent and call.effect is not None) else None
    if reconciled is True:
        _count_confirmed_effect(judgements)
    statuses, failed = _mask_after_first_failure(judgements)
    if failed is None:
        first, action = FirstFailedLayer.NONE, None
        reason = _passing_reason(judgements[Layer.OUTCOME], call, reconciled=reconciled is True)
    else:
        first, action = FirstFailedLayer(failed.value), judgements[failed].next_action
        reason = judgements[failed].reason or failed.value
    return CallLayers(
        statuses=statuses,
        first_failed=first,
        reason=reason,
        next_action=action,
        silent=silent,
        side_effecting=call.read_only is not True,
        reconciled=reconciled,
        evidence_missing=bool(call.missing),
    )


def _count_confirmed_effect(judgements: dict[Layer, LayerJudgement]) -> None:
    """A confirmed effect: the silent layers count as passed.

    The effect happened, so the request reached the server and was accepted: a transport failure
    (the lost answer) or an unobserved authorization exchange counts as passed.
    """
    if judgements[Layer.TRANSPORT].status is LayerStatus.FAILED:
        judgements[Layer.TRANSPORT] = LayerJudgement(LayerStatus.PASSED, Reason.EFFECT_CONFIRMED)
    if judgements[Layer.AUTHORIZATION].status is LayerStatus.UNOBSERVED:
        judgements[Layer.AUTHORIZATION] = LayerJudgement(
            LayerStatus.PASSED, Reason.EFFECT_CONFIRMED
        )
    judgements[Layer.EXECUTION] = LayerJudgement(LayerStatus.PASSED, Reason.EFFECT_CONFIRMED)
    judgements[Layer.PROTOCOL] = _UNOBSERVED


def _mask_after_first_failure(
    judgements: Mapping[Layer, LayerJudgement],
) -> tuple[dict[Layer, LayerStatus], Layer | None]:
    """Each layer's status in order, ``unobserved`` after the first failed one (also returned)."""
    statuses: dict[Layer, LayerStatus] = {}
    failed: Layer | None = None
    for layer in LAYERS:
        if failed is not None:
            statuses[layer] = LayerStatus.UNOBSERVED
            continue
        statuses[layer] = judgements[layer].status
        if statuses[layer] is LayerStatus.FAILED:
            failed = layer
    return statuses, failed


def stopped_at(first_failed: FirstFailedLayer) -> dict[Layer, LayerStatus]:
    """The layer statuses of a request known only by where it stopped (a failed handshake:
    docs/model.md#handshake): ``passed`` before ``first_failed``, ``failed`` there, and
    ``unobserved`` after it, masked like a call's (every layer ``passed`` for ``none``)."""
    reached = {layer: _FAILED if layer.value == first_failed.value else _PASSED for layer in LAYERS}
    statuses, _ = _mask_after_first_failure(reached)
    return statuses


def _passing_reason(outcome: LayerJudgement, call: CallEvidence, *, reconciled: bool) -> str:
    """The reason of a call with no failed layer: missing evidence, then the outcome's reason."""
    if call.missing:
        return Reason.EVIDENCE_MISSING
    reason = outcome.reason or Reason.OK
    return Reason.EFFECT_CONFIRMED if reconciled and reason == Reason.OK else reason
