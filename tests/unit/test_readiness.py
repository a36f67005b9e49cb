"""The two session rules ``check`` used to work out for itself, now in the core.

``core.layers.stopped_at``: the layer statuses of a failed handshake (passed before its first
failed layer, failed there, unobserved after), which the session result of a failed handshake
carries. ``core.contract.readiness``: the verdict of a session that made no call, as its catalog
decides it (docs/model.md#without-a-call). Both are checked against the rule as ``check`` wrote it.
"""

from __future__ import annotations

import pytest

from otel_mcp_health.clientside.span_report import NOT_DISCOVERED
from otel_mcp_health.core.catalog import classify_catalog
from otel_mcp_health.core.contract import readiness
from otel_mcp_health.core.evidence import CatalogEvidence, HandshakeEvidence, SessionEvidence
from otel_mcp_health.core.layers import stopped_at
from otel_mcp_health.core.session import classify_session
from otel_mcp_health.core.vocabulary import (
    LAYERS,
    CatalogVerdict,
    FirstFailedLayer,
    LayerStatus,
    NextAction,
    Verdict,
)

from .test_catalog import CASES
from .test_session import AUTH_401, HTTP_401, REFUSED, hs


def _up_to(failed: FirstFailedLayer) -> dict[str, str]:
    """The rule as ``check`` wrote it: passed before the failed layer, unobserved after."""
    statuses: dict[str, str] = {}
    reached = False
    for layer in LAYERS:
        if layer.value == failed.value:
            statuses[layer.value] = LayerStatus.FAILED.value
            reached = True
        else:
            statuses[layer.value] = (
                LayerStatus.UNOBSERVED.value if reached else LayerStatus.PASSED.value
            )
    return statuses


@pytest.mark.parametrize("failed", [f for f in FirstFailedLayer if f is not FirstFailedLayer.NONE])
def test_stopped_at_masks_like_the_check_did(failed: FirstFailedLayer) -> None:
    statuses = stopped_at(failed)
    assert list(statuses) == list(LAYERS)
    assert {layer.value: status.value for layer, status in statuses.items()} == _up_to(failed)


def test_stopped_at_nowhere_passes_every_layer() -> None:
    assert set(stopped_at(FirstFailedLayer.NONE).values()) == {LayerStatus.PASSED}


@pytest.mark.parametrize(
    ("handshake", "failed"),
    [
        (hs(transport=REFUSED, negotiated_version=None), FirstFailedLayer.TRANSPORT),
        (
            hs(transport=HTTP_401, authorization=AUTH_401, negotiated_version=None),
            FirstFailedLayer.AUTHORIZATION,
        ),
        (hs(error_code=-32602, negotiated_version=None), FirstFailedLayer.PROTOCOL),
    ],
    ids=["transport", "authorization", "protocol"],
)
def test_a_failed_handshake_carries_the_layers_of_where_it_stopped(
    handshake: HandshakeEvidence, failed: FirstFailedLayer
) -> None:
    result = classify_session(SessionEvidence(handshake=handshake)).call
    assert result.rule == "handshake_failed"
    assert result.first_failed_layer is failed
    assert dict(result.layers) == stopped_at(failed)


def _check_rule(verdict: CatalogVerdict, reason: str) -> tuple[str, str, str]:
    """The readiness as ``check`` wrote it, from the catalog verdict and reason."""
    if verdict is CatalogVerdict.CONVERGED:
        return CatalogVerdict.CONVERGED.value, reason, NextAction.NONE.value
    action = (
        NextAction.RESUME_DISCOVERY
        if verdict is CatalogVerdict.INCOMPLETE
        else NextAction.BOUNDED_REDISCOVERY
    )
    return Verdict.STALE_CATALOG.value, f"catalog_{reason}", action.value


@pytest.mark.parametrize(
    ("evidence", "verdict", "reason"),
    [(case[2], case[3], case[4]) for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_readiness_is_the_rule_check_applied(
    evidence: CatalogEvidence, verdict: CatalogVerdict, reason: str
) -> None:
    catalog = classify_catalog(evidence)
    assert (catalog.verdict, catalog.reason) == (verdict, reason)
    ready = readiness(catalog)
    assert (ready.verdict.value, str(ready.reason), ready.next_action.value) == _check_rule(
        verdict, reason
    )


def test_every_catalog_verdict_is_covered() -> None:
    assert {case[3] for case in CASES} == set(CatalogVerdict)


def test_checks_readiness_without_a_judged_catalog_is_the_cores_for_no_discovery() -> None:
    ready = readiness(classify_catalog(CatalogEvidence()))
    assert (ready.verdict.value, str(ready.reason), ready.next_action.value) == NOT_DISCOVERED
