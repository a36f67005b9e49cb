"""The session health contract over a whole chain of evidence (docs/model.md#contract).

A session record joins a handshake, a catalog, one tool call and its progress clocks. This module
derives the facts (handshake compatibility, the catalog verdict, the clocks of an in-flight call)
and hands them to the one contract table in :mod:`.contract`.

An in-flight call whose idle window or absolute deadline has expired counts as timed out: its
execution layer fails exactly as if the deadline had fired, and the contract decides between
``effect_unknown`` (a possible side effect) and ``tool_failed`` (read-only).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from otel_mcp_health.core.calls import CallResult, result_from
from otel_mcp_health.core.catalog import CatalogResult, classify_catalog
from otel_mcp_health.core.contract import ContractContext, HandshakeFacts, handshake_facts
from otel_mcp_health.core.evidence import (
    CallEvidence,
    ExecutionEvidence,
    ProgressEvidence,
    SessionEvidence,
)
from otel_mcp_health.core.layers import evaluate_layers, stopped_at
from otel_mcp_health.core.progress import ClockState, ProgressSummary, clocks, summarize
from otel_mcp_health.core.vocabulary import CatalogVerdict, FirstFailedLayer, LiveState


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionResult:
    """The session verdict plus the pieces an operator needs beside it."""

    call: CallResult
    catalog: CatalogResult | None
    catalog_verdict: CatalogVerdict
    live_state: LiveState | None
    progress: ProgressSummary | None


def _expired_call(call: CallEvidence | None) -> CallEvidence:
    """The call as it stands when a clock expired: execution failed by timeout."""
    base = call or CallEvidence()
    execution = base.execution or ExecutionEvidence()
    return dataclasses.replace(base, execution=dataclasses.replace(execution, timed_out=True))


def classify_session(evidence: SessionEvidence) -> SessionResult:
    """Judge one session's chain of evidence; total and deterministic."""
    catalog = classify_catalog(evidence.catalog) if evidence.catalog is not None else None
    progress = evidence.progress
    # An expired clock stands for a call even when no call evidence was recorded.
    uses_tools = evidence.call is not None or (
        progress is not None and clocks(progress).live_state is LiveState.STALLED
    )
    return judge_in_session(
        evidence.call,
        progress,
        handshake=handshake_facts(evidence.handshake, uses_tools=uses_tools),
        catalog=catalog,
        catalog_verdict=evidence.catalog_verdict,
    )


def judge_in_session(
    call: CallEvidence | None,
    progress: ProgressEvidence | None,
    *,
    handshake: HandshakeFacts,
    catalog: CatalogResult | None,
    catalog_verdict: CatalogVerdict | None = None,
) -> SessionResult:
    """Judge a call from the session's facts, derived once per change of the evidence that
    decides them (the handshake's, the catalog's), plus the call's own evidence."""
    clock: ClockState | None = None
    summary: ProgressSummary | None = None
    if progress is not None:
        summary = summarize(progress)
        clock = clocks(progress)
        if clock.live_state is LiveState.STALLED:
            call = _expired_call(call)
    layers = evaluate_layers(call) if call is not None else None
    verdict = catalog.verdict if catalog is not None else catalog_verdict
    verdict = verdict or CatalogVerdict.UNVERIFIABLE
    context = ContractContext(
        layers=layers,
        judge_session=True,
        handshake=handshake,
        catalog=catalog,
        catalog_verdict=verdict,
        clock=clock,
        unapproved=call.unapproved if call is not None else None,
    )
    result = result_from(call, layers, context)
    if handshake.failed is not None and result.rule == "handshake_failed":
        first = handshake.failed.first_failed
        result = dataclasses.replace(result, first_failed_layer=first, layers=stopped_at(first))
    return SessionResult(
        call=result,
        catalog=catalog,
        catalog_verdict=verdict,
        live_state=clock.live_state if clock else None,
        progress=summary,
    )


__all__ = ["FirstFailedLayer", "SessionResult", "classify_session", "judge_in_session"]
