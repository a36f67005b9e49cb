"""The session contract (SPEC §5): every row of the verdict table, precedence, the two clocks."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from otel_mcp_health.core.contract import VERDICT_RULES
from otel_mcp_health.core.evidence import (
    AuthorizationEvidence,
    CatalogEvidence,
    Discovery,
    EffectEvidence,
    ExecutionEvidence,
    HandshakeEvidence,
    OutcomeEvidence,
    ProgressEvent,
    ProgressEvidence,
    ProtocolEvidence,
    SessionEvidence,
    TransportEvidence,
)
from otel_mcp_health.core.progress import summarize
from otel_mcp_health.core.session import classify_session
from otel_mcp_health.core.vocabulary import (
    AuthError,
    CatalogVerdict,
    FirstFailedLayer,
    LiveState,
    NextAction,
    TransportOutcome,
    Verdict,
)

from .test_calls import GOOD, TIMEOUT, with_

S = 1_000_000_000
T0 = 1_800_000_000 * S
HANDSHAKE = HandshakeEvidence(
    requested_version="2025-11-25",
    negotiated_version="2025-11-25",
    capabilities={"tools": {"listChanged": True}},
)
CONVERGED = CatalogVerdict.CONVERGED


def session(**kw: Any) -> SessionEvidence:
    base: dict[str, Any] = {"handshake": HANDSHAKE, "catalog_verdict": CONVERGED, "call": GOOD}
    base.update(kw)
    return SessionEvidence(**base)


def hs(**kw: Any) -> HandshakeEvidence:
    return dataclasses.replace(HANDSHAKE, **kw)


def progress(now: int, *events: tuple[int, str, float], **kw: Any) -> ProgressEvidence:
    base: dict[str, Any] = {
        "now": T0 + now * S,
        "started_at": T0,
        "in_flight": True,
        "idle_window_seconds": 20,
        "deadline_seconds": 300,
        "request_token": "7",
        "events": tuple(
            ProgressEvent(at=T0 + at * S, token=tok, progress=v) for at, tok, v in events
        ),
    }
    base.update(kw)
    return ProgressEvidence(**base)


HTTP_401 = TransportEvidence(
    outcome=TransportOutcome.HTTP_ERROR, http_status=401, request_written=True
)
REFUSED = TransportEvidence(outcome=TransportOutcome.CONNECTION_REFUSED, request_written=False)
AUTH_401 = AuthorizationEvidence(http_status=401, error=AuthError.INVALID_TOKEN)
IN_FLIGHT_CALL = dataclasses.replace(GOOD, protocol=None, execution=None, outcome=None)

CASES: list[tuple[str, str, SessionEvidence, Verdict, NextAction]] = [
    (
        "handshake-refused",
        "handshake_failed",
        session(
            handshake=hs(negotiated_version=None, capabilities=None, transport=REFUSED),
            catalog_verdict=None,
            call=None,
        ),
        Verdict.TRANSPORT_ERROR,
        NextAction.RETRY_WITHIN_BUDGET,
    ),
    (
        "handshake-401",
        "handshake_failed",
        session(
            handshake=hs(negotiated_version=None, transport=HTTP_401, authorization=AUTH_401),
            catalog_verdict=None,
            call=None,
        ),
        Verdict.NEEDS_AUTH,
        NextAction.REFRESH_TOKEN_ONCE,
    ),
    (
        "handshake-32022",
        "handshake_failed",
        session(handshake=hs(negotiated_version=None, error_code=-32022), call=None),
        Verdict.INCOMPATIBLE_SESSION,
        NextAction.ALIGN_PROTOCOL_VERSION,
    ),
    (
        "handshake-32603",
        "handshake_failed",
        session(handshake=hs(negotiated_version=None, error_code=-32603), call=None),
        Verdict.PROTOCOL_ERROR,
        NextAction.FIX_REQUEST_CONTRACT,
    ),
    (
        "needs-auth-beats-stale-catalog",
        "needs_auth",
        session(
            catalog_verdict=CatalogVerdict.STALE,
            call=with_(transport=HTTP_401, authorization=AUTH_401),
        ),
        Verdict.NEEDS_AUTH,
        NextAction.REFRESH_TOKEN_ONCE,
    ),
    (
        "unsupported-version",
        "incompatible_session",
        session(
            handshake=hs(negotiated_version="2023-01-01"), catalog_verdict=CatalogVerdict.STALE
        ),
        Verdict.INCOMPATIBLE_SESSION,
        NextAction.ALIGN_PROTOCOL_VERSION,
    ),
    (
        "client-supports-fewer-versions",
        "incompatible_session",
        session(handshake=hs(supported_versions=("2026-07-28",))),
        Verdict.INCOMPATIBLE_SESSION,
        NextAction.ALIGN_PROTOCOL_VERSION,
    ),
    (
        "tools-capability-missing",
        "incompatible_session",
        session(handshake=hs(capabilities={"prompts": {}})),
        Verdict.INCOMPATIBLE_SESSION,
        NextAction.ALIGN_PROTOCOL_VERSION,
    ),
    (
        "call-says-32021",
        "incompatible_session",
        session(call=with_(protocol=ProtocolEvidence(error_code=-32021))),
        Verdict.INCOMPATIBLE_SESSION,
        NextAction.ALIGN_PROTOCOL_VERSION,
    ),
    (
        "stale-catalog-beats-effect-unknown",
        "stale_catalog",
        session(catalog_verdict=CatalogVerdict.STALE, call=with_(execution=TIMEOUT)),
        Verdict.STALE_CATALOG,
        NextAction.BOUNDED_REDISCOVERY,
    ),
    (
        "incomplete-catalog",
        "stale_catalog",
        session(catalog_verdict=CatalogVerdict.INCOMPLETE),
        Verdict.STALE_CATALOG,
        NextAction.RESUME_DISCOVERY,
    ),
    (
        "catalog-unobserved",
        "stale_catalog",
        session(catalog_verdict=None),
        Verdict.STALE_CATALOG,
        NextAction.BOUNDED_REDISCOVERY,
    ),
    (
        "effect-unknown",
        "effect_unknown",
        session(call=with_(execution=TIMEOUT)),
        Verdict.EFFECT_UNKNOWN,
        NextAction.RECONCILE_BEFORE_RETRY,
    ),
    (
        "stalled-idle-window",
        "effect_unknown",
        session(call=IN_FLIGHT_CALL, progress=progress(25, (3, "7", 1.0))),
        Verdict.EFFECT_UNKNOWN,
        NextAction.RECONCILE_BEFORE_RETRY,
    ),
    (
        "reconciled-absent",
        "reconciled_absent",
        session(call=with_(execution=TIMEOUT, effect=EffectEvidence(observed=False, method="q"))),
        Verdict.TOOL_FAILED,
        NextAction.RETRY_WITHIN_BUDGET,
    ),
    (
        "http-503",
        "transport_error",
        session(
            call=with_(
                transport=TransportEvidence(outcome=TransportOutcome.HTTP_ERROR, http_status=503)
            )
        ),
        Verdict.TRANSPORT_ERROR,
        NextAction.RETRY_WITHIN_BUDGET,
    ),
    (
        "method-not-found",
        "protocol_error",
        session(call=with_(protocol=ProtocolEvidence(error_code=-32601))),
        Verdict.PROTOCOL_ERROR,
        NextAction.BOUNDED_REDISCOVERY,
    ),
    (
        "is-error",
        "tool_failed",
        session(call=with_(execution=ExecutionEvidence(is_error=True))),
        Verdict.TOOL_FAILED,
        NextAction.INSPECT_TOOL,
    ),
    (
        "stalled-read-only",
        "tool_failed",
        session(call=dataclasses.replace(IN_FLIGHT_CALL, read_only=True), progress=progress(301)),
        Verdict.TOOL_FAILED,
        NextAction.INSPECT_TOOL,
    ),
    (
        "working-no-progress-yet",
        "working",
        session(call=IN_FLIGHT_CALL, progress=progress(19)),
        Verdict.WORKING,
        NextAction.NONE,
    ),
    (
        "working-valid-progress",
        "working",
        session(call=IN_FLIGHT_CALL, progress=progress(40, (10, "7", 1.0), (25, "7", 2.0))),
        Verdict.WORKING,
        NextAction.NONE,
    ),
    (
        "false-success",
        "false_success",
        session(call=with_(outcome=OutcomeEvidence(method="file_digest", passed=False))),
        Verdict.FALSE_SUCCESS,
        NextAction.VERIFY_DESTINATION,
    ),
    ("healthy", "healthy", session(), Verdict.HEALTHY, NextAction.NONE),
    (
        "unverified-no-receipt",
        "unverified",
        session(call=with_(outcome=None)),
        Verdict.UNVERIFIED,
        NextAction.ADD_OUTCOME_VERIFIER,
    ),
    (
        "unverified-handshake-unobserved",
        "unverified",
        session(handshake=None),
        Verdict.UNVERIFIED,
        NextAction.ADD_OUTCOME_VERIFIER,
    ),
    (
        "unverified-capabilities-unobserved",
        "unverified",
        session(handshake=hs(capabilities=None)),
        Verdict.UNVERIFIED,
        NextAction.ADD_OUTCOME_VERIFIER,
    ),
    (
        "unverified-no-call",
        "unverified",
        session(call=None),
        Verdict.UNVERIFIED,
        NextAction.ADD_OUTCOME_VERIFIER,
    ),
]


@pytest.mark.parametrize(
    ("rule", "evidence", "verdict", "action"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_rule_rows(
    rule: str, evidence: SessionEvidence, verdict: Verdict, action: NextAction
) -> None:
    result = classify_session(evidence).call
    assert (result.rule, result.verdict, result.next_action) == (rule, verdict, action)


def test_every_rule_row_and_every_verdict_is_exercised() -> None:
    assert {c[1] for c in CASES} == {rule.name for rule in VERDICT_RULES}
    assert {c[3] for c in CASES} == set(Verdict)


def test_failed_handshake_reports_its_own_first_failed_layer() -> None:
    result = classify_session(CASES[1][2])
    assert result.call.first_failed_layer is FirstFailedLayer.AUTHORIZATION
    assert result.call.verdict is not Verdict.STALE_CATALOG


def test_live_state_from_the_clocks() -> None:
    working = classify_session(session(call=IN_FLIGHT_CALL, progress=progress(19)))
    assert working.live_state is LiveState.WORKING
    stalled = classify_session(session(call=IN_FLIGHT_CALL, progress=progress(21)))
    assert stalled.live_state is LiveState.STALLED
    finished = classify_session(session(progress=progress(5, in_flight=False)))
    assert finished.live_state is None


@pytest.mark.parametrize(
    ("events", "now"),
    [
        ([(10, "7", 1.0), (15, "7", 1.0)], 31),  # a repeated value does not reset the idle window
        ([(10, "7", 1.0), (15, "8", 2.0)], 31),  # another request's token does not either
        ([(10, "7", 2.0), (15, "7", 1.0)], 31),  # nor a value that goes backwards
    ],
    ids=["repeated-value", "wrong-token", "decreasing"],
)
def test_inconsistent_progress_never_extends_the_clock(
    events: list[tuple[int, str, float]], now: int
) -> None:
    result = classify_session(session(call=IN_FLIGHT_CALL, progress=progress(now, *events)))
    assert result.live_state is LiveState.STALLED
    assert result.call.verdict is Verdict.EFFECT_UNKNOWN


def test_clock_without_evidence_is_not_working() -> None:
    evidence = dataclasses.replace(progress(5), now=None)
    result = classify_session(session(call=IN_FLIGHT_CALL, progress=evidence))
    assert result.live_state is LiveState.STALLED


def test_progress_summary() -> None:
    evidence = progress(
        60,
        (10, "7", 1.0),
        (12, "7", 1.0),
        (20, "8", 5.0),
        (30, "7", 2.0),
        (50, "7", 3.0),
        in_flight=False,
        completed_at=T0 + 40 * S,
    )
    summary = summarize(evidence)
    assert summary.count == 5
    assert summary.valid_count == 2
    assert summary.monotonic is False
    assert summary.late_count == 1
    assert summary.wrong_token_count == 1
    assert summary.max_gap_seconds == 20.0


def test_missing_evidence_is_never_healthy() -> None:
    """A call whose recorder lacked a hook (an SDK release without it) is not green, whatever
    passed; a failure it did observe still decides the verdict."""
    assert classify_session(session()).call.verdict is Verdict.HEALTHY
    missing = classify_session(session(call=with_(missing=("output_schema",)))).call
    assert (missing.verdict, missing.reason) == (Verdict.UNVERIFIED, "evidence_missing")
    failed = classify_session(
        session(call=with_(missing=("list_changed",), execution=ExecutionEvidence(is_error=True)))
    ).call
    assert (failed.verdict, failed.reason) == (Verdict.TOOL_FAILED, "is_error")


# ---- the precedence exception for a server never discovered ---------------------------------
NEVER_DISCOVERED = CatalogEvidence(list_changed=True, now=T0)


@pytest.mark.parametrize(
    ("call", "verdict", "reason"),
    [
        (with_(execution=ExecutionEvidence(is_error=True)), Verdict.TOOL_FAILED, "is_error"),
        (with_(protocol=ProtocolEvidence(error_code=-32602)), Verdict.PROTOCOL_ERROR, None),
        (with_(execution=TIMEOUT), Verdict.EFFECT_UNKNOWN, None),
        (GOOD, Verdict.STALE_CATALOG, "catalog_no_discovery"),
    ],
    ids=["is-error", "json-rpc-error", "timeout", "all-passed"],
)
def test_a_never_discovered_catalog_hides_no_failed_layer(
    call: Any, verdict: Verdict, reason: str | None
) -> None:
    result = classify_session(
        SessionEvidence(handshake=HANDSHAKE, catalog=NEVER_DISCOVERED, call=call)
    )
    assert result.catalog is not None
    assert str(result.catalog.reason) == "no_discovery"
    assert result.call.verdict is verdict
    if reason is not None:
        assert str(result.call.reason) == reason


def test_other_unverifiable_catalogs_still_outrank_a_failed_call() -> None:
    undigested = Discovery(started_at=T0 - 10 * S, completed_at=T0 - 5 * S)
    catalog = CatalogEvidence(list_changed=True, now=T0, discoveries=(undigested,))
    failed = with_(execution=ExecutionEvidence(is_error=True))
    result = classify_session(SessionEvidence(handshake=HANDSHAKE, catalog=catalog, call=failed))
    assert result.catalog is not None
    assert str(result.catalog.reason) != "no_discovery"
    assert result.call.verdict is Verdict.STALE_CATALOG
