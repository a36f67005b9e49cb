"""Catalog convergence (docs/model.md#catalog): does the client registry match a fresh discovery?

Three events are never collapsed: the **signal** (``notifications/tools/list_changed``), the
**discovery** (a ``tools/list`` traversal that reaches a page without ``nextCursor``) and the
**install** (what the client exposes matches that discovery). :func:`classify_catalog` first
derives plain facts from the evidence (:class:`CatalogFacts`), then walks :data:`CATALOG_RULES`,
first match wins. ``converged`` is earned only by positive evidence: a complete traversal, fresh
with respect to the signal (or to a bounded refresh policy when the server cannot signal), whose
digest equals the digest of what the client exposes.

Chain walking is :mod:`otel_mcp_health.core.traversal`'s (one walk, one page cap).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from otel_mcp_health.core.digest import DigestError, digest_tools
from otel_mcp_health.core.evidence import CatalogEvidence, Discovery, InstallCheck, JsonObject
from otel_mcp_health.core.install import compare_tools, install_reason
from otel_mcp_health.core.reasons import Reason
from otel_mcp_health.core.rules import Decision, Rule, first_match
from otel_mcp_health.core.traversal import (
    COMPLETION_UNRECORDED,
    CURSOR_GAP,
    CURSOR_LOOP,
    CURSOR_REMAINING,
    PAGE_FAILED,
    CursorChain,
)
from otel_mcp_health.core.vocabulary import (
    NS_PER_S,
    CatalogVerdict,
    ClientSource,
    NextAction,
)


def chain_defect(discovery: Discovery) -> str | None:
    """Return the first defect of a traversal's cursor chain, or ``None`` when it is complete."""
    completed = discovery.completed_at is not None
    if discovery.chain is not None:
        return discovery.chain.verdict(completed=completed)
    chain = CursorChain(max_pages=None)  # recorded evidence: already in memory, walked whole
    for page in discovery.pages:
        chain.add(page.cursor, page.next_cursor, failed=page.failed)
    return chain.summary().verdict(completed=completed)


def discovered_tools(discovery: Discovery) -> tuple[JsonObject, ...] | None:
    """All tool definitions of a traversal, or ``None`` when a page kept only digests (or no
    page was observed at all: an empty traversal is no evidence of an empty catalog)."""
    if not discovery.pages:
        return None
    tools: list[JsonObject] = []
    for page in discovery.pages:
        if page.tools is None:
            return None
        tools.extend(page.tools)
    return tuple(tools)


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogFacts:
    """Plain facts derived from :class:`CatalogEvidence`; the rules read only these."""

    evidence: CatalogEvidence
    latest: Discovery | None
    latest_defect: str | None
    discovered_digest: str | None
    client_digest: str | None
    client_source: ClientSource
    digest_error: str | None
    tools: tuple[JsonObject, ...] | None
    #: What the client installed, compared tool by tool with a discovery (when it was).
    install: InstallCheck | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogResult:
    """The catalog verdict with its reason, next action and the two digests compared."""

    verdict: CatalogVerdict
    reason: str
    next_action: NextAction
    rule: str
    discovered_digest: str | None
    client_digest: str | None
    client_source: ClientSource
    max_age_seconds: float | None


def _digest_or_error(tools: Iterable[JsonObject]) -> tuple[str | None, str | None]:
    try:
        return digest_tools(tools), None
    except DigestError as exc:
        return None, exc.reason


def _compared(
    client_tools: tuple[JsonObject, ...],
    tools: tuple[JsonObject, ...] | None,
    discovered: str | None,
) -> InstallCheck | None:
    """The client's tools compared tool by tool with the discovery, when it kept its tools."""
    if tools is None or discovered is None:
        return None
    return compare_tools(client_tools, tools, discovery_digest=discovered)


def _discovered(
    complete: Discovery | None,
) -> tuple[str | None, str | None, tuple[JsonObject, ...] | None]:
    """The last complete discovery's digest, or why it has none, and its tools when kept."""
    if complete is None:
        return None, None, None
    tools = discovered_tools(complete)
    if complete.digest_error is not None:
        return None, complete.digest_error, tools
    if complete.digest is not None:
        return complete.digest, None, tools
    if tools is not None:
        digest, error = _digest_or_error(tools)
        return digest, error, tools
    return None, None, tools


def derive_facts(evidence: CatalogEvidence) -> CatalogFacts:
    """Find the latest traversal and its defect, and the digests of the last complete discovery
    and of what the client exposes (by default: that discovery's result)."""
    latest = evidence.discoveries[-1] if evidence.discoveries else None
    defect = chain_defect(latest) if latest is not None else None
    complete = next((d for d in reversed(evidence.discoveries) if chain_defect(d) is None), None)
    discovered, error, tools = _discovered(complete)
    client: str | None
    install = evidence.install
    if evidence.offered is not None:
        # the model's own request outranks every report (docs/model.md#agents); its definitions
        # were rewritten by the framework, so it has no digest comparable with the discovery's
        client, source, install = None, ClientSource.MODEL_REQUEST, evidence.offered
    elif evidence.client_digest is not None or evidence.client_digest_error is not None:
        client, source = evidence.client_digest, ClientSource.DIGEST
        error = error or evidence.client_digest_error
    elif evidence.client_tools is not None:
        source = ClientSource.REGISTERED
        client, client_error = _digest_or_error(evidence.client_tools)
        error = error or client_error
        install = _compared(evidence.client_tools, tools, discovered) if error is None else None
    else:
        client, source = discovered, ClientSource.DISCOVERY_RESULT
    return CatalogFacts(
        evidence=evidence,
        latest=latest,
        latest_defect=defect,
        discovered_digest=discovered,
        client_digest=client,
        client_source=source,
        digest_error=error,
        tools=tools,
        install=install,
    )


# ----------------------------------------------------------------------------------------------
# The rules, in the order of docs/model.md#catalog
# ----------------------------------------------------------------------------------------------
def _no_discovery(f: CatalogFacts) -> Decision[CatalogVerdict] | None:
    if f.latest is None:
        return Decision(
            CatalogVerdict.UNVERIFIABLE, Reason.NO_DISCOVERY, NextAction.BOUNDED_REDISCOVERY
        )
    return None


def _incomplete(f: CatalogFacts) -> Decision[CatalogVerdict] | None:
    if f.latest_defect is not None:
        return Decision(CatalogVerdict.INCOMPLETE, f.latest_defect, NextAction.RESUME_DISCOVERY)
    return None


def _digest_unknown(f: CatalogFacts) -> Decision[CatalogVerdict] | None:
    if f.digest_error is not None:
        return Decision(CatalogVerdict.UNVERIFIABLE, f.digest_error, NextAction.BOUNDED_REDISCOVERY)
    if f.discovered_digest is None:
        return Decision(
            CatalogVerdict.UNVERIFIABLE, Reason.DIGEST_UNAVAILABLE, NextAction.BOUNDED_REDISCOVERY
        )
    return None


def _silent_server(f: CatalogFacts) -> Decision[CatalogVerdict] | None:
    evidence = f.evidence
    if evidence.list_changed is True:
        return None
    policy = evidence.refresh_policy
    if policy is None:
        return Decision(
            CatalogVerdict.UNVERIFIABLE, Reason.NO_REFRESH_POLICY, NextAction.BOUNDED_REDISCOVERY
        )
    completed = f.latest.completed_at if f.latest is not None else None
    if evidence.now is None or completed is None:
        return Decision(
            CatalogVerdict.UNVERIFIABLE, Reason.CLOCK_UNOBSERVED, NextAction.BOUNDED_REDISCOVERY
        )
    if evidence.now - completed > policy.max_age_seconds * NS_PER_S:
        return Decision(
            CatalogVerdict.STALE, Reason.REFRESH_OVERDUE, NextAction.BOUNDED_REDISCOVERY
        )
    return None


def _signal_after_discovery(f: CatalogFacts) -> Decision[CatalogVerdict] | None:
    if not f.evidence.notifications:
        return None
    signal = max(f.evidence.notifications)
    started = f.latest.started_at if f.latest is not None else None
    # "After" is strict, and a traversal with no recorded start cannot prove it followed.
    if started is None or started <= signal:
        return Decision(
            CatalogVerdict.STALE, Reason.SIGNAL_AFTER_DISCOVERY, NextAction.BOUNDED_REDISCOVERY
        )
    return None


def _digest_mismatch(f: CatalogFacts) -> Decision[CatalogVerdict] | None:
    if f.install is not None:
        reason = install_reason(f.install, f.discovered_digest)
    else:
        reason = Reason.DIGEST_MISMATCH if f.client_digest != f.discovered_digest else None
    if reason is not None:
        return Decision(CatalogVerdict.STALE, reason, NextAction.BOUNDED_REDISCOVERY)
    return None


def required_properties(tool: Mapping[str, Any]) -> tuple[str, ...]:
    """The property names a tool's ``inputSchema`` requires."""
    schema = tool.get("inputSchema")
    if not isinstance(schema, Mapping):
        return ()
    required = schema.get("required")
    if not isinstance(required, list):
        return ()
    return tuple(name for name in required if isinstance(name, str))


def missing_required(required: Iterable[str], given: Iterable[str]) -> list[str]:
    """The one call-time contract check: required property names not given, sorted (names only,
    never values; docs/model.md#catalog)."""
    sent = set(given)
    return sorted({name for name in required if name not in sent})


def _call_contract(f: CatalogFacts, finding: str) -> Decision[CatalogVerdict] | None:
    by_name = {t.get("name"): t for t in f.tools} if f.tools is not None else None
    for call in f.evidence.tool_calls:
        if call.contract is not None:
            if call.contract == finding:
                return Decision(CatalogVerdict.STALE, finding, NextAction.BOUNDED_REDISCOVERY)
            continue
        if by_name is None:
            continue
        tool = by_name.get(call.name)
        if finding == Reason.UNKNOWN_TOOL_CALLED and tool is None:
            return Decision(CatalogVerdict.STALE, finding, NextAction.BOUNDED_REDISCOVERY)
        if (
            finding == Reason.MISSING_REQUIRED_ARGUMENT
            and tool is not None
            and call.argument_names is not None
            and missing_required(required_properties(tool), call.argument_names)
        ):
            return Decision(CatalogVerdict.STALE, finding, NextAction.BOUNDED_REDISCOVERY)
    return None


def _unknown_tool(f: CatalogFacts) -> Decision[CatalogVerdict] | None:
    return _call_contract(f, Reason.UNKNOWN_TOOL_CALLED)


def _missing_argument(f: CatalogFacts) -> Decision[CatalogVerdict] | None:
    return _call_contract(f, Reason.MISSING_REQUIRED_ARGUMENT)


def _converged(_: CatalogFacts) -> Decision[CatalogVerdict]:
    return Decision(CatalogVerdict.CONVERGED, Reason.OK, NextAction.NONE)


CATALOG_RULES: tuple[Rule[CatalogFacts, CatalogVerdict], ...] = (
    Rule(
        "no_discovery",
        (CatalogVerdict.UNVERIFIABLE,),
        "no `tools/list` traversal was observed for this session",
        _no_discovery,
    ),
    Rule(
        "incomplete_traversal",
        (CatalogVerdict.INCOMPLETE,),
        "the latest traversal did not finish: `nextCursor` remains, a cursor gap or loop, "
        "a failed page (first defect from the first page)",
        _incomplete,
    ),
    Rule(
        "digest_unknown",
        (CatalogVerdict.UNVERIFIABLE,),
        "the discovered or the client digest cannot be computed (`digest_unrepresentable`) "
        "or was not recorded",
        _digest_unknown,
    ),
    Rule(
        "silent_server_freshness",
        (CatalogVerdict.UNVERIFIABLE, CatalogVerdict.STALE),
        "the server did not advertise `tools.listChanged`: no refresh policy → unverifiable; "
        "last complete traversal older than the policy's max age → stale",
        _silent_server,
    ),
    Rule(
        "signal_after_discovery",
        (CatalogVerdict.STALE,),
        "a `list_changed` signal arrived and no traversal started strictly after it completed",
        _signal_after_discovery,
    ),
    Rule(
        "digest_mismatch",
        (CatalogVerdict.STALE,),
        "what the client exposes differs from the last complete discovery: tool by tool when "
        "the install was compared so (a changed definition, or a comparison with another "
        "discovery → `digest_mismatch`; an installed tool not listed → "
        "`installed_tool_unlisted`; none of a non-empty discovery → `nothing_installed`; a "
        "subset of equal definitions matches), else by the whole digest",
        _digest_mismatch,
    ),
    Rule(
        "unknown_tool_called",
        (CatalogVerdict.STALE,),
        "the agent called a tool that is not in the last complete discovery",
        _unknown_tool,
    ),
    Rule(
        "missing_required_argument",
        (CatalogVerdict.STALE,),
        "the agent omitted a property the current `inputSchema` requires (names only)",
        _missing_argument,
    ),
    Rule(
        "converged",
        (CatalogVerdict.CONVERGED,),
        "otherwise: the client registry matches a fully traversed, fresh discovery",
        _converged,
    ),
)


def classify_catalog(evidence: CatalogEvidence) -> CatalogResult:
    """Judge catalog convergence (docs/model.md#catalog); total, deterministic, never raises."""
    facts = derive_facts(evidence)
    rule, decision = first_match(CATALOG_RULES, facts)
    policy = evidence.refresh_policy
    return CatalogResult(
        verdict=decision.verdict,
        reason=decision.reason,
        next_action=decision.next_action,
        rule=rule.name,
        discovered_digest=facts.discovered_digest,
        client_digest=facts.client_digest,
        client_source=facts.client_source,
        max_age_seconds=policy.max_age_seconds if policy is not None else None,
    )


__all__ = [
    "CATALOG_RULES",
    "COMPLETION_UNRECORDED",
    "CURSOR_GAP",
    "CURSOR_LOOP",
    "CURSOR_REMAINING",
    "PAGE_FAILED",
    "CatalogFacts",
    "CatalogResult",
    "chain_defect",
    "classify_catalog",
    "derive_facts",
    "missing_required",
    "required_properties",
]
