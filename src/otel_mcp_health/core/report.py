"""Classify a parsed record and shape the answer as the documented ``--json`` output.

The shapes are in docs/evidence-format.md#output.

One function per kind, plus :func:`judge` that dispatches on the record. The shapes here are the
``classify`` CLI contract; the processor uses the classifiers directly and never these dicts.
"""

from __future__ import annotations

from typing import Any

from otel_mcp_health.core.calls import CallResult, classify_call
from otel_mcp_health.core.catalog import classify_catalog
from otel_mcp_health.core.evidence import CallEvidence, CatalogEvidence, Record
from otel_mcp_health.core.session import classify_session


def _layers(result: CallResult) -> dict[str, str]:
    return {layer.value: status.value for layer, status in result.layers.items()}


def _row(record: Record, kind: str, **fields: Any) -> dict[str, Any]:
    """An output row: the record's id and kind first, then ``fields`` in the order given (the
    order of the printed JSON keys)."""
    return {"id": record.id, "kind": kind, **fields}


def judge(record: Record) -> tuple[dict[str, Any], CallResult | None]:
    """Classify one record; return its output row and, for call records, the call result."""
    evidence = record.evidence
    if isinstance(evidence, CatalogEvidence):
        catalog = classify_catalog(evidence)
        return _row(
            record,
            "catalog",
            verdict=catalog.verdict.value,
            reason=catalog.reason,
            discoveredDigest=catalog.discovered_digest,
            clientDigest=catalog.client_digest,
            nextAction=catalog.next_action.value,
        ), None
    if isinstance(evidence, CallEvidence):
        call = classify_call(evidence)
        return _row(
            record,
            "call",
            firstFailedLayer=call.first_failed_layer.value,
            layers=_layers(call),
            verdict=call.verdict.value,
            nextAction=call.next_action.value,
            reason=call.reason,
        ), call
    session = classify_session(evidence)
    return _row(
        record,
        "session",
        verdict=session.call.verdict.value,
        firstFailedLayer=session.call.first_failed_layer.value,
        nextAction=session.call.next_action.value,
        catalogVerdict=session.catalog_verdict.value,
        reason=session.call.reason,
    ), None


def expectation_mismatches(record: Record, row: dict[str, Any]) -> list[str]:
    """Fields of the record's optional ``expect`` member that the verdict row contradicts."""
    return [
        f"{key}: expected {value}, got {row.get(key)}"
        for key, value in sorted(record.expect.items())
        if row.get(key) != value
    ]
