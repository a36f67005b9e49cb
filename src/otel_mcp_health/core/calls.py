"""Judging single tool calls, and the two rates that summarize them (docs/model.md#two-rates).

:func:`classify_call` runs the five-layer test (:mod:`.layers`) and then the session contract
(:mod:`.contract`) with the session-level rows switched off. :func:`rates` reproduces the fixtures'
gap between *protocol-level success* (a JSON-RPC result envelope arrived, ``isError`` or not) and
*verified outcomes* (an outcome verifier's receipt passed; the ``not_required`` policy is not a
receipt and does not count).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from otel_mcp_health.core.contract import VERDICT_RULES, ContractContext
from otel_mcp_health.core.evidence import CallEvidence
from otel_mcp_health.core.layers import CallLayers, evaluate_layers
from otel_mcp_health.core.rules import first_match
from otel_mcp_health.core.vocabulary import (
    OUTCOME_NOT_REQUIRED,
    FirstFailedLayer,
    Layer,
    LayerStatus,
    NextAction,
    Verdict,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CallResult:
    """One call's layers, first failed layer, verdict, next action and reason code."""

    layers: Mapping[Layer, LayerStatus]
    first_failed_layer: FirstFailedLayer
    verdict: Verdict
    next_action: NextAction
    reason: str
    rule: str
    effect_unknown: bool
    envelope: bool
    verified: bool


def effect_unresolved(layers: CallLayers) -> bool:
    """Whether a possible side effect is still unreconciled (``mcp_health.effect.unknown``)."""
    return layers.silent and layers.side_effecting and layers.reconciled is None


def result_from(
    call: CallEvidence | None, layers: CallLayers | None, context: ContractContext
) -> CallResult:
    """Run the contract table on a prepared context and package the answer."""
    rule, decision = first_match(VERDICT_RULES, context)
    verified = (
        layers is not None
        and call is not None
        and call.outcome is not None
        and call.outcome.method != OUTCOME_NOT_REQUIRED
        and layers.statuses[Layer.OUTCOME] is LayerStatus.PASSED
    )
    return CallResult(
        layers=dict(layers.statuses) if layers else dict.fromkeys(Layer, LayerStatus.UNOBSERVED),
        first_failed_layer=layers.first_failed if layers else FirstFailedLayer.NONE,
        verdict=decision.verdict,
        next_action=decision.next_action,
        reason=decision.reason,
        rule=rule.name,
        effect_unknown=layers is not None and effect_unresolved(layers),
        envelope=layers is not None and layers.envelope,
        verified=verified,
    )


def classify_call(call: CallEvidence) -> CallResult:
    """Judge one tool-call attempt on its own evidence (the contract without session rows)."""
    layers = evaluate_layers(call)
    return result_from(call, layers, ContractContext(layers=layers, unapproved=call.unapproved))


@dataclass(frozen=True, slots=True, kw_only=True)
class Rates:
    """Seed 003's two rates over a set of calls."""

    calls: int
    envelopes: int
    verified: int

    @property
    def protocol_success(self) -> float | None:
        """Calls that received a result envelope / all calls (``None`` for no calls)."""
        return self.envelopes / self.calls if self.calls else None

    @property
    def verified_outcomes(self) -> float | None:
        """Calls whose outcome verifier passed / all calls (``None`` for no calls)."""
        return self.verified / self.calls if self.calls else None


def rates(results: Iterable[CallResult]) -> Rates:
    """Count envelopes and verified outcomes."""
    calls = envelopes = verified = 0
    for result in results:
        calls += 1
        envelopes += result.envelope
        verified += result.verified
    return Rates(calls=calls, envelopes=envelopes, verified=verified)
