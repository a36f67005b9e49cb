"""The report of a run, read from the judged spans: one JSON object, or words for a person on call.

Nothing here judges. The verdicts, reasons, first failed layers, layer statuses and next actions
are the attributes the span processor put on the exported spans (names from
:mod:`otel_mcp_health.attributes`); the driver's own counts (pages, signals, re-discoveries) are
added beside them. Without a call, the top-level verdict is the session's
(docs/model.md#without-a-call): the failed handshake's verdict, else the readiness the processor
wrote with the latest catalog judgement (``mcp_health.readiness.*``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from opentelemetry.sdk.trace import ReadableSpan

from otel_mcp_health import attributes as A
from otel_mcp_health.clientside.command_line import CheckOptions
from otel_mcp_health.clientside.driver import Facts
from otel_mcp_health.core.vocabulary import (
    GREEN,
    LAYERS,
    TOOLS_CALL,
    ApprovalVerdict,
    CatalogVerdict,
    FirstFailedLayer,
    LayerStatus,
    NextAction,
    Verdict,
)

_HANDSHAKES: Final = ("initialize", "server/discover")
#: Reason when no span carries a verdict at all (the server could not even be started).
NO_EVIDENCE: Final = "no_evidence"
#: Reason when ``--timeout`` ended the check before any verdict was judged.
CHECK_TIMED_OUT: Final = "check_timed_out"
#: The readiness of a connected session when no span judged its catalog (no traversal ended):
#: what the processor writes for a catalog without discovery (``core.contract.readiness``; a unit
#: test holds the two equal, as check never imports a classifier).
NOT_DISCOVERED: Final = (
    Verdict.STALE_CATALOG.value,
    "catalog_no_discovery",
    NextAction.BOUNDED_REDISCOVERY.value,
)


def _attrs(span: ReadableSpan) -> Mapping[str, Any]:
    return span.attributes or {}


def _handshake(spans: Sequence[ReadableSpan]) -> Mapping[str, Any] | None:
    """The last handshake span: a probe refused in favour of ``initialize`` comes first."""
    found = [_attrs(s) for s in spans if _attrs(s).get(A.MCP_METHOD_NAME) in _HANDSHAKES]
    return found[-1] if found else None


def _first(spans: Sequence[ReadableSpan], name: str) -> Any:
    """The first value of attribute ``name`` on any span, or ``None``."""
    return next((v for s in spans if (v := _attrs(s).get(name)) is not None), None)


def failure(attrs: Mapping[str, Any], next_action: str | None = None) -> dict[str, Any]:
    """A judged handshake's (or connection's) verdict in the report's words (``next_action``:
    when the span names none). The layers are those the processor wrote, where the session
    failed."""
    return {
        "verdict": attrs[A.VERDICT],
        "reason": attrs.get(A.REASON),
        "nextAction": attrs.get(A.NEXT_ACTION, next_action),
        "firstFailedLayer": attrs.get(A.CALL_FIRST_FAILED_LAYER, FirstFailedLayer.NONE.value),
        "layers": {
            layer.value: attrs[key]
            for layer in LAYERS
            if (key := A.layer_attribute(layer.value)) in attrs
        },
    }


def _session(spans: Sequence[ReadableSpan], facts: Facts) -> dict[str, Any]:
    attrs = _handshake(spans) or {}
    listed = attrs.get(A.SESSION_CAPABILITY_TOOLS_LIST_CHANGED)
    # ``--era modern`` adopts 2026-07-28 without a handshake: the version is on every later span.
    version = attrs.get(A.MCP_PROTOCOL_VERSION) or _first(spans, A.MCP_PROTOCOL_VERSION)
    session: dict[str, Any] = {
        "protocolVersion": version,
        "era": attrs.get(A.SESSION_ERA),
        "listChanged": listed if isinstance(listed, bool) else None,
        "serverName": attrs.get(A.SERVER_NAME),
        "transport": attrs.get(A.NETWORK_TRANSPORT) or _first(spans, A.NETWORK_TRANSPORT),
        "connected": facts.connected,
    }
    if A.VERDICT in attrs:  # the processor judges a handshake only when it failed
        session.update(failure(attrs))
        scopes = attrs.get(A.AUTH_REQUIRED_SCOPES)
        if scopes:  # scope names only (never a token), as the span carries them
            session["requiredScopes"] = list(scopes)
    return session


def _approval(spans: Sequence[ReadableSpan]) -> dict[str, Any] | None:
    """The latest discovery's approval against the approved catalog (``None``: none judged)."""
    judged = [_attrs(s) for s in spans if A.CATALOG_APPROVAL in _attrs(s)]
    if not judged:
        return None
    attrs = judged[-1]
    return {
        "verdict": attrs[A.CATALOG_APPROVAL],
        "reason": attrs.get(A.CATALOG_APPROVAL_REASON),
        **{
            kind: list(attrs.get(key, ()))
            for kind, key in (
                ("material", A.CATALOG_APPROVAL_MATERIAL_TOOLS),
                ("cosmetic", A.CATALOG_APPROVAL_COSMETIC_TOOLS),
                ("added", A.CATALOG_APPROVAL_ADDED_TOOLS),
                ("removed", A.CATALOG_APPROVAL_REMOVED_TOOLS),
                ("changedMembers", A.CATALOG_APPROVAL_CHANGED_MEMBERS),
            )
        },
        "truncated": attrs.get(A.CATALOG_APPROVAL_TOOLS_TRUNCATED) is True,
        # Members a partial pin never compared (empty with full pins): approved, not fully.
        "uncomparedMembers": list(attrs.get(A.CATALOG_APPROVAL_UNCOMPARED_MEMBERS, ())),
    }


def _catalog(spans: Sequence[ReadableSpan], facts: Facts) -> dict[str, Any]:
    judged = [_attrs(s) for s in spans if A.CATALOG_VERDICT in _attrs(s)]
    latest = judged[-1] if judged else {}
    return {
        "approval": _approval(spans),
        "verdict": latest.get(A.CATALOG_VERDICT, CatalogVerdict.UNVERIFIABLE.value),
        "reason": latest.get(A.CATALOG_REASON, "no_discovery"),
        "pages": facts.pages,
        "toolCount": facts.tool_count,
        "digest": latest.get(A.CATALOG_DIGEST),
        "notifications": facts.notifications,
        "rediscovered": facts.rediscovered,
        "discoveryStopped": facts.discovery_stopped,
    }


def _call(spans: Sequence[ReadableSpan], tool: str) -> dict[str, Any] | None:
    calls = [
        _attrs(s)
        for s in spans
        if _attrs(s).get(A.MCP_METHOD_NAME) == TOOLS_CALL and A.VERDICT in _attrs(s)
    ]
    if not calls:
        return None
    attrs = calls[-1]
    return {
        "tool": tool,
        "verdict": attrs[A.VERDICT],
        "reason": attrs.get(A.REASON),
        "nextAction": attrs.get(A.NEXT_ACTION),
        "firstFailedLayer": attrs.get(A.CALL_FIRST_FAILED_LAYER),
        "layers": {
            layer.value: attrs.get(A.layer_attribute(layer.value), LayerStatus.UNOBSERVED.value)
            for layer in LAYERS
        },
        "outcomeMethod": attrs.get(A.OUTCOME_METHOD),
        "catalogVerdict": attrs.get(A.CATALOG_VERDICT),
        "approval": attrs.get(A.CALL_APPROVAL),
        "approvalPartial": attrs.get(A.CALL_APPROVAL_PARTIAL) is True,
    }


def session_verdict(
    spans: Sequence[ReadableSpan], session: Mapping[str, Any], facts: Facts
) -> tuple[str, str, str]:
    """(verdict, reason, next action) of a check without a call (see the module docstring)."""
    if "verdict" in session:
        return session["verdict"], session["reason"], session["nextAction"]
    if not facts.connected:
        reason = CHECK_TIMED_OUT if facts.timed_out else NO_EVIDENCE
        return Verdict.UNVERIFIED.value, reason, NextAction.NONE.value
    judged = [_attrs(s) for s in spans if A.READINESS_VERDICT in _attrs(s)]
    if judged:
        latest = judged[-1]
        return (
            latest[A.READINESS_VERDICT],
            latest[A.READINESS_REASON],
            latest[A.READINESS_NEXT_ACTION],
        )
    return NOT_DISCOVERED


def build(spans: Sequence[ReadableSpan], facts: Facts, options: CheckOptions) -> dict[str, Any]:
    """The ``--json`` object (docs/check.md#json)."""
    session = _session(spans, facts)
    catalog = _catalog(spans, facts)
    report: dict[str, Any] = {"target": options.target, "session": session, "catalog": catalog}
    call = _call(spans, options.call) if options.call is not None else None
    if call is not None:
        # Whether the server listed the called tool a moment ago (null: no discovery finished).
        names = facts.tool_names
        call["listed"] = None if names is None else options.call in names
        report["call"] = call
        verdict, reason, action = call["verdict"], call["reason"], call["nextAction"]
    elif options.call is not None and "verdict" not in session and facts.connected:
        # Asked for a call that left no judged span (cut off by --timeout before it ended).
        verdict, reason, action = Verdict.UNVERIFIED.value, CHECK_TIMED_OUT, NextAction.NONE.value
    else:
        verdict, reason, action = session_verdict(spans, session, facts)
    report.update(
        verdict=verdict,
        reason=reason,
        nextAction=action,
        timedOut=facts.timed_out,
        error=facts.error,
        elapsedSeconds=round(facts.elapsed_s, 3),
    )
    return report


def drifted(report: Mapping[str, Any]) -> bool:
    """Whether the discovery drifted from its approved catalog (``--pins``)."""
    approval = report["catalog"].get("approval")
    return approval is not None and approval["verdict"] == ApprovalVerdict.DRIFTED.value


def unapproved(report: Mapping[str, Any]) -> bool:
    """With ``--pins``: the discovery is not approved (drifted, or no entry matches its label,
    as ``pin --verify`` judges it: a server that announces another name, or none, is not green)."""
    approval = report["catalog"].get("approval")
    return approval is not None and approval["verdict"] != ApprovalVerdict.APPROVED.value


def exit_code(report: Mapping[str, Any]) -> int:
    """``0`` healthy or converged (and approved, with ``--pins``), else ``1``."""
    return 0 if report["verdict"] in GREEN and not unapproved(report) else 1
