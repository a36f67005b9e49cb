"""The contract's ``stale_catalog`` row for an unapproved tool (docs/model.md#approval).

An unapproved call reads ``stale_catalog`` / ``tool_unapproved`` (or ``pins_unreadable``) /
``review_catalog_change``: before convergence staleness (a rediscovery cannot approve a tool),
over the call's own failed layer, also for a call judged on its own, and after the handshake rows.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.approval import Approval, ToolChange
from otel_mcp_health.core.bounds import MAX_NAME_LENGTH
from otel_mcp_health.core.calls import classify_call
from otel_mcp_health.core.catalog import CatalogResult
from otel_mcp_health.core.contract import HandshakeFacts
from otel_mcp_health.core.evidence import (
    NOT_APPLICABLE,
    CallEvidence,
    ExecutionEvidence,
    ProtocolEvidence,
    TransportEvidence,
)
from otel_mcp_health.core.reasons import ApprovalReason
from otel_mcp_health.core.session import judge_in_session
from otel_mcp_health.core.vocabulary import (
    ApprovalVerdict,
    CatalogVerdict,
    ClientSource,
    NextAction,
    TransportOutcome,
)

COMPATIBLE = HandshakeFacts(failed=None, incompatible_reason=None, compatible=True)
INCOMPATIBLE = HandshakeFacts(
    failed=None, incompatible_reason="unsupported_version", compatible=False
)
OK_CALL = CallEvidence(
    tool="read_file",
    transport=TransportEvidence(outcome=TransportOutcome.OK, request_written=True),
    authorization=NOT_APPLICABLE,
    protocol=ProtocolEvidence(),
    execution=ExecutionEvidence(is_error=False),
)


def catalog(verdict: CatalogVerdict, reason: str, action: NextAction) -> CatalogResult:
    return CatalogResult(
        verdict=verdict,
        reason=reason,
        next_action=action,
        rule="test",
        discovered_digest=None,
        client_digest=None,
        client_source=ClientSource.DISCOVERY_RESULT,
        max_age_seconds=None,
    )


CONVERGED = catalog(CatalogVerdict.CONVERGED, "ok", NextAction.NONE)
SIGNALLED = catalog(CatalogVerdict.STALE, "signal_after_discovery", NextAction.BOUNDED_REDISCOVERY)


def judged(
    call: CallEvidence, result: CatalogResult = CONVERGED, handshake: HandshakeFacts = COMPATIBLE
) -> tuple[str, str, str]:
    decided = judge_in_session(call, None, handshake=handshake, catalog=result).call
    return decided.verdict.value, decided.reason, decided.next_action.value


@pytest.mark.parametrize("reason", ["tool_unapproved", "pins_unreadable"])
def test_an_unapproved_call_asks_for_review(reason: str) -> None:
    unapproved = replace(OK_CALL, unapproved=reason)
    assert judged(unapproved) == ("stale_catalog", reason, "review_catalog_change")
    # before convergence staleness: a rediscovery cannot approve the tool
    assert judged(unapproved, SIGNALLED) == ("stale_catalog", reason, "review_catalog_change")
    # on its own (no session facts) too
    alone = classify_call(unapproved)
    assert (alone.verdict.value, alone.reason) == ("stale_catalog", reason)
    # the handshake rows still come first
    assert judged(unapproved, handshake=INCOMPATIBLE)[0] == "incompatible_session"


def test_an_approved_call_is_judged_as_without_pins() -> None:
    assert judged(OK_CALL)[0] == "unverified"
    assert judged(OK_CALL, SIGNALLED) == (
        "stale_catalog",
        "catalog_signal_after_discovery",
        "bounded_rediscovery",
    )


def test_an_unapproved_call_hides_its_own_failure_like_convergence_staleness() -> None:
    failed = CallEvidence(
        tool="read_file",
        transport=TransportEvidence(outcome=TransportOutcome.CONNECTION_REFUSED),
        authorization=NOT_APPLICABLE,
        unapproved="tool_unapproved",
    )
    assert judged(failed) == ("stale_catalog", "tool_unapproved", "review_catalog_change")


def test_a_hostile_catalogs_names_are_bounded_on_the_span() -> None:
    """Seventy added tools with 300-character names: at most 64 names per class, each capped
    like every exported name, and the span says the list was cut."""
    names = [f"{i:03d}" + "x" * 297 for i in range(70)]
    added = tuple(ToolChange(name, "added") for name in names)
    approval = Approval(ApprovalVerdict.DRIFTED, ApprovalReason.TOOL_ADDED, added)
    attrs = _codec.encode_catalog_approval(approval)
    assert attrs[A.CATALOG_APPROVAL_ADDED_COUNT] == 70
    assert len(attrs[A.CATALOG_APPROVAL_ADDED_TOOLS]) == 64
    assert all(len(name) <= MAX_NAME_LENGTH for name in attrs[A.CATALOG_APPROVAL_ADDED_TOOLS])
    assert attrs[A.CATALOG_APPROVAL_TOOLS_TRUNCATED] is True
    call = _codec.encode_call_approval(approval, names[3])
    assert call == {A.CALL_APPROVAL: "unapproved", A.CALL_APPROVAL_REASON: "tool_unapproved"}
    assert _codec.decode_call_approval(call) == "tool_unapproved"


def test_an_approval_our_code_cannot_make_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the core ever raise, every listed tool counts as changed materially: each call
    reads unapproved, never approved by default."""
    from otel_mcp_health.core.pins import PinFile, pin_server
    from otel_mcp_health.instrumentation import _approval
    from otel_mcp_health.instrumentation._state import SessionState

    tools = [{"name": "b", "inputSchema": {"type": "object"}}, {"name": "a"}]
    pins = _approval.Pins(PinFile((pin_server(tools, name="s"),)))
    state = SessionState(server_name="s")
    assert _approval.judge(pins, state, tools).verdict == ApprovalVerdict.APPROVED

    def broken(*_: object) -> None:
        raise RuntimeError

    monkeypatch.setattr(_approval, "judge_approval", broken)
    failed = _approval.judge(pins, state, tools)
    assert (failed.verdict, failed.reason, failed.material) == (
        "drifted",
        "material_change",
        ("a", "b"),
    )
    assert failed.unapproved("a")
