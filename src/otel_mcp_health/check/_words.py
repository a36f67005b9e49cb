"""The check's report in words a person on call understands (the codes stay beside the words).

Every verdict, next action and layer status has one sentence here; a test keeps these tables
complete against the vocabulary in :mod:`otel_mcp_health.core.vocabulary`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from otel_mcp_health.clientside.span_report import drifted
from otel_mcp_health.core.vocabulary import (
    LAYERS,
    ApprovalVerdict,
    CatalogVerdict,
    LayerStatus,
    NextAction,
    Verdict,
)

VERDICT_WORDS: Final[Mapping[str, str]] = {
    Verdict.HEALTHY: "the server works and the call did what it promised",
    Verdict.UNVERIFIED: "everything observed passed, but nothing proves the call's effect",
    Verdict.NEEDS_AUTH: "the server refused the credentials",
    Verdict.INCOMPATIBLE_SESSION: "client and server do not speak a common protocol version",
    Verdict.STALE_CATALOG: "the tool list the client holds cannot be trusted to be current",
    Verdict.EFFECT_UNKNOWN: "no answer came back; the tool may or may not have acted",
    Verdict.TRANSPORT_ERROR: "the server could not be reached, or answered with an HTTP error",
    Verdict.PROTOCOL_ERROR: "the server rejected the request (JSON-RPC error)",
    Verdict.TOOL_FAILED: "the tool ran and reported a failure",
    Verdict.WORKING: "the call is still running within its time limits",
    Verdict.FALSE_SUCCESS: "the tool said it succeeded, but the promised effect is not there",
    CatalogVerdict.CONVERGED: "handshake and tool list are complete and current",
}

CATALOG_WORDS: Final[Mapping[str, str]] = {
    CatalogVerdict.CONVERGED: "complete and current",
    CatalogVerdict.STALE: "out of date",
    CatalogVerdict.INCOMPLETE: "the page chain did not finish",
    CatalogVerdict.UNVERIFIABLE: "cannot be checked",
}

NEXT_ACTION_WORDS: Final[Mapping[str, str]] = {
    NextAction.NONE: "nothing to do",
    NextAction.RETRY_WITHIN_BUDGET: "retry a few times (transport budget: 3), then page the "
    "server's owner",
    NextAction.REFRESH_TOKEN_ONCE: "refresh the access token once; if it fails again, "
    "re-authenticate",
    NextAction.REQUEST_SCOPE: "ask for the missing permission (scope); retrying will not help",
    NextAction.ALIGN_PROTOCOL_VERSION: "upgrade the client or the server to a common protocol "
    "version",
    NextAction.BOUNDED_REDISCOVERY: "list the tools again (once, bounded) before the next call",
    NextAction.RESUME_DISCOVERY: "finish listing the tools (follow the page cursors to the end)",
    NextAction.RECONCILE_BEFORE_RETRY: "check at the destination whether the effect happened "
    "before retrying",
    NextAction.FIX_REQUEST_CONTRACT: "fix the request: tool name or arguments do not match "
    "the server",
    NextAction.INSPECT_TOOL: "look at the tool's own logs; the server itself is fine",
    NextAction.VERIFY_DESTINATION: "look at the destination: the promised effect is missing",
    NextAction.ADD_OUTCOME_VERIFIER: "add an outcome verifier (--outcomes FILE, --verify-file, "
    "--verify-http) to prove the effect",
    NextAction.REVIEW_CATALOG_CHANGE: "review the changed tool definitions and re-pin them "
    "(otel-mcp-health pin --update); retrying will not help",
}

APPROVAL_WORDS: Final[Mapping[str, str]] = {
    ApprovalVerdict.APPROVED: "the tools are the ones approved (a cosmetic change or a removed "
    "tool aside)",
    ApprovalVerdict.DRIFTED: "tools changed materially or were added since they were approved "
    "(the check exits 1)",
    ApprovalVerdict.UNPINNED: "no pins in the approved catalog cover this server",
}
#: An ``approved`` reached with partial pins: said so, never as a plain approval.
APPROVED_PARTIALLY: Final = (
    "the pinned members match, but the pins are partial (from an MCPB manifest?): the members "
    "below were never compared (re-pin from the live server to compare them; the check exits 0)"
)

STATUS_WORDS: Final[Mapping[str, str]] = {
    LayerStatus.PASSED: "passed",
    LayerStatus.FAILED: "FAILED",
    LayerStatus.UNOBSERVED: "not observed",
    LayerStatus.NOT_APPLICABLE: "not applicable",
}

#: Reasons of a check that collected no verdict at all: what happened, and what to do instead.
NO_VERDICT_WORDS: Final[Mapping[str, tuple[str, str]]] = {
    "no_evidence": (
        "no evidence: the server could not be started or reached",
        "check the command or URL",
    ),
    "check_timed_out": (
        "no evidence: --timeout ended the check before anything was judged",
        "raise --timeout, or look at why the server is this slow",
    ),
}

_ERAS: Final = {"initialize": "initialize handshake", "server/discover": "server/discover (2026)"}
_NO_HANDSHAKE: Final = "no handshake: adopted with --era modern"
_TRANSPORTS: Final = {"pipe": "stdio", "tcp": "streamable HTTP"}


def _yes_no(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "unknown"


def _session_lines(session: Mapping[str, Any]) -> list[str]:
    if not session.get("connected") and "verdict" not in session:
        return ["session   no session was established"]
    via = _TRANSPORTS.get(str(session.get("transport")), "in-process")
    lines = [
        (
            f"session   {session.get('serverName') or 'unnamed server'} over {via}, protocol "
            f"{session.get('protocolVersion') or 'not negotiated'} "
            f"({_ERAS.get(str(session.get('era')), _NO_HANDSHAKE)})"
        ),
        f"          announces tool-list changes: {_yes_no(session.get('listChanged'))}",
    ]
    if "verdict" in session:
        lines.append(
            f"          handshake failed at the {session['firstFailedLayer']} layer: "
            f"{session['verdict']} ({session['reason']})"
        )
    if session.get("requiredScopes"):
        lines.append(f"          the server asks for scope: {' '.join(session['requiredScopes'])}")
    return lines


def _catalog_lines(catalog: Mapping[str, Any]) -> list[str]:
    verdict = str(catalog["verdict"])
    digest = catalog.get("digest")
    stopped = {"cursor_loop": ", stopped at a repeated cursor", "page_cap": ", stopped at the cap"}
    return [
        f"tools     {catalog['toolCount']} tools in {catalog['pages']} page(s)"
        f"{stopped.get(str(catalog.get('discoveryStopped')), '')}"
        + (f", digest {str(digest)[:19]}…" if digest else ""),
        f"catalog   {verdict}: {CATALOG_WORDS.get(verdict, verdict)} ({catalog['reason']})",
        (
            f"          list_changed received: {catalog['notifications']}, "
            f"listed again: {catalog['rediscovered']}"
        ),
    ]


def _approval_lines(approval: Mapping[str, Any] | None) -> list[str]:
    """The discovery against its approved catalog: verdict, reason, the tools per class."""
    if approval is None:
        return []
    reason = f" ({approval['reason']})" if approval.get("reason") else ""
    uncompared = approval.get("uncomparedMembers")
    words = APPROVAL_WORDS[approval["verdict"]]
    if uncompared and approval["verdict"] == ApprovalVerdict.APPROVED:
        reason, words = " (partial pins)", APPROVED_PARTIALLY
    lines = [f"approval  {approval['verdict']}{reason}: {words}"]
    for kind in ("material", "added", "cosmetic", "removed"):
        if approval.get(kind):
            more = " and more" if approval.get("truncated") else ""
            lines.append(f"          {kind + ':':<10}{' '.join(approval[kind])}{more}")
    if approval.get("changedMembers"):
        lines.append(f"          changed members: {' '.join(approval['changedMembers'])}")
    if uncompared:
        shown = " ".join(uncompared)
        lines.append(f"          not compared for some tools (partial pins): {shown}")
    return lines


def _not_listed(report: Mapping[str, Any]) -> tuple[str, str] | None:
    """What happened and what to do when ``--call`` named a tool the server's listing, made a
    moment before, does not hold: a typo far more often than a catalog that changed."""
    call = report.get("call")
    if call is None or call.get("listed") is not False:
        return None
    tool, count = call["tool"], report["catalog"]["toolCount"]
    todo = f"check the tool's name: {tool!r} is not among the {count} tools the server listed"
    return f"the server does not list a tool named {tool!r}", todo + " a moment ago"


def _call_lines(call: Mapping[str, Any]) -> list[str]:
    lines = [f"call      {call['tool']}: {call['verdict']} ({call['reason']})"]
    if call.get("listed") is False:
        lines.append("          not in the tool list the server gave just before the call")
    first = call.get("firstFailedLayer")
    for layer in LAYERS:
        status = str(call["layers"].get(layer.value))
        mark = "  <- first failure" if layer.value == first else ""
        method = (
            f" ({call['outcomeMethod']})"
            if layer.value == "outcome" and call.get("outcomeMethod")
            else ""
        )
        words = STATUS_WORDS.get(status, status)
        lines.append(f"          {layer.value:<14} {words}{method}{mark}")
    return lines


def render(report: Mapping[str, Any]) -> str:
    """The human report: facts first, then the verdict and what to do next."""
    verdict, action = str(report["verdict"]), str(report["nextAction"])
    lines = [f"otel-mcp-health check: {report['target']}", ""]
    lines += _session_lines(report["session"])
    if report["session"].get("connected"):
        lines += _catalog_lines(report["catalog"])
        lines += _approval_lines(report["catalog"].get("approval"))
    if "call" in report:
        lines += _call_lines(report["call"])
    if report.get("timedOut"):
        lines.append("timeout   the check hit --timeout before it finished")
    if report.get("error"):
        lines.append(f"stopped   on {report['error']} (details not shown: they may hold secrets)")
    said, todo = _not_listed(report) or NO_VERDICT_WORDS.get(
        str(report["reason"]),
        (VERDICT_WORDS.get(verdict, verdict), NEXT_ACTION_WORDS.get(action, action)),
    )
    if action == NextAction.NONE and drifted(report):  # green, but not what was approved
        action = NextAction.REVIEW_CATALOG_CHANGE.value
        todo = NEXT_ACTION_WORDS[action]
    lines += [
        "",
        f"verdict   {verdict.upper()}: {said}",
        f"          reason: {report['reason']}",
        f"next      {todo} ({action})",
    ]
    return "\n".join(lines) + "\n"
