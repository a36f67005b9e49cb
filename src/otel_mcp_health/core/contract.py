"""The session health contract (docs/model.md#contract): one verdict per call, first match wins.

:data:`VERDICT_RULES` is the one table of the eleven states. A tool call judged on its own (an
docs/evidence-format.md ``call`` record, or a span whose session facts are unknown) runs through
the same table with the session-level rows switched off
(``ContractContext.judge_session = False``), so there is exactly one implementation of the
precedence:

handshake failure → ``needs_auth`` → ``incompatible_session`` → ``stale_catalog`` (an
unapproved tool first, then convergence) →
``effect_unknown`` → (reconciled absent) ``tool_failed`` → ``transport_error`` →
``protocol_error`` → ``tool_failed`` → ``working`` → ``false_success`` → ``healthy`` →
``unverified``.

``healthy`` is earned: transport, authorization (or not applicable), protocol, execution and
outcome all passed, and when the session is judged, the handshake was observed to be compatible.
Anything less that failed nowhere is ``unverified``: missing evidence is never green (nor is a
call whose recorder could not gather some evidence, reason ``evidence_missing``).
"""

from __future__ import annotations

from dataclasses import dataclass

from otel_mcp_health.core.catalog import CatalogResult
from otel_mcp_health.core.evidence import CallEvidence, HandshakeEvidence, ProtocolEvidence
from otel_mcp_health.core.layers import CallLayers, evaluate_layers
from otel_mcp_health.core.progress import ClockState
from otel_mcp_health.core.reasons import Reason
from otel_mcp_health.core.rules import Decision, Rule
from otel_mcp_health.core.vocabulary import (
    DEFAULT_SUPPORTED_VERSIONS,
    INCOMPATIBLE_SESSION_CODES,
    CatalogVerdict,
    FirstFailedLayer,
    Layer,
    LayerStatus,
    LiveState,
    NextAction,
    Verdict,
)

_INCOMPATIBLE_REASONS = frozenset(f"jsonrpc_{code}" for code in INCOMPATIBLE_SESSION_CODES)


@dataclass(frozen=True, slots=True, kw_only=True)
class HandshakeFacts:
    """What the contract needs from the handshake."""

    failed: CallLayers | None
    incompatible_reason: str | None
    compatible: bool


def handshake_facts(handshake: HandshakeEvidence | None, *, uses_tools: bool) -> HandshakeFacts:
    """Judge a handshake: did it fail (and where), is it compatible, was compatibility observed?"""
    if handshake is None:
        return HandshakeFacts(failed=None, incompatible_reason=None, compatible=False)
    answered = handshake.error_code is not None or handshake.negotiated_version is not None
    layers = evaluate_layers(
        CallEvidence(
            transport=handshake.transport,
            authorization=handshake.authorization,
            protocol=ProtocolEvidence(error_code=handshake.error_code) if answered else None,
        )
    )
    failed = layers if layers.failed else None
    supported = handshake.supported_versions or DEFAULT_SUPPORTED_VERSIONS
    incompatible: str | None = None
    version = handshake.negotiated_version
    if handshake.error_code in INCOMPATIBLE_SESSION_CODES:
        incompatible = f"jsonrpc_{handshake.error_code}"
    elif version is not None and version not in supported:
        incompatible = Reason.UNSUPPORTED_VERSION
    elif (
        uses_tools and handshake.capabilities is not None and "tools" not in handshake.capabilities
    ):
        incompatible = Reason.MISSING_CAPABILITY
    compatible = (
        failed is None
        and incompatible is None
        and version is not None
        and handshake.capabilities is not None
    )
    return HandshakeFacts(failed=failed, incompatible_reason=incompatible, compatible=compatible)


@dataclass(frozen=True, slots=True, kw_only=True)
class ContractContext:
    """Precomputed facts for one tool call (and its session when ``judge_session``)."""

    layers: CallLayers | None
    judge_session: bool = False
    handshake: HandshakeFacts | None = None
    catalog: CatalogResult | None = None
    catalog_verdict: CatalogVerdict | None = None
    clock: ClockState | None = None
    #: Why the called tool is not the approved one (``CallEvidence.unapproved``), or ``None``.
    unapproved: str | None = None


_D = Decision[Verdict]


def _handshake_failed(c: ContractContext) -> _D | None:
    failed = c.handshake.failed if (c.judge_session and c.handshake) else None
    if failed is None:
        return None
    action = failed.next_action or NextAction.NONE
    match failed.first_failed:
        case FirstFailedLayer.TRANSPORT:
            return Decision(Verdict.TRANSPORT_ERROR, failed.reason, action)
        case FirstFailedLayer.AUTHORIZATION:
            return Decision(Verdict.NEEDS_AUTH, failed.reason, action)
        case _ if failed.reason in _INCOMPATIBLE_REASONS:
            return Decision(
                Verdict.INCOMPATIBLE_SESSION, failed.reason, NextAction.ALIGN_PROTOCOL_VERSION
            )
        case _:
            return Decision(Verdict.PROTOCOL_ERROR, failed.reason, action)


def _first_failed(c: ContractContext, layer: FirstFailedLayer) -> CallLayers | None:
    if c.layers is not None and c.layers.first_failed is layer:
        return c.layers
    return None


def _needs_auth(c: ContractContext) -> _D | None:
    layers = _first_failed(c, FirstFailedLayer.AUTHORIZATION)
    if layers is None:
        return None
    return Decision(Verdict.NEEDS_AUTH, layers.reason, layers.next_action or NextAction.NONE)


def _incompatible(c: ContractContext) -> _D | None:
    reason: str | None = None
    if c.judge_session and c.handshake is not None:
        reason = c.handshake.incompatible_reason
    protocol = _first_failed(c, FirstFailedLayer.PROTOCOL)
    if reason is None and protocol is not None and protocol.reason in _INCOMPATIBLE_REASONS:
        reason = protocol.reason
    if reason is None:
        return None
    return Decision(Verdict.INCOMPATIBLE_SESSION, reason, NextAction.ALIGN_PROTOCOL_VERSION)


def _stale_catalog(c: ContractContext) -> _D | None:
    if c.unapproved is not None:  # before convergence: no rediscovery can approve a tool
        return Decision(Verdict.STALE_CATALOG, c.unapproved, NextAction.REVIEW_CATALOG_CHANGE)
    if not c.judge_session:
        return None
    if c.catalog is not None:
        if c.catalog.verdict is CatalogVerdict.CONVERGED or _own_failure_shows(c):
            return None
        return stale_catalog(c.catalog)
    verdict = c.catalog_verdict or CatalogVerdict.UNVERIFIABLE
    if verdict is CatalogVerdict.CONVERGED:
        return None
    action = (
        NextAction.RESUME_DISCOVERY
        if verdict is CatalogVerdict.INCOMPLETE
        else NextAction.BOUNDED_REDISCOVERY
    )
    return Decision(Verdict.STALE_CATALOG, f"catalog_{verdict.value}", action)


def stale_catalog(catalog: CatalogResult) -> _D:
    """The ``stale_catalog`` decision of a catalog that is not converged: reason
    ``catalog_<its reason>``, the catalog's next action."""
    return Decision(Verdict.STALE_CATALOG, f"catalog_{catalog.reason}", catalog.next_action)


def readiness(
    catalog: CatalogResult, handshake: Decision[Verdict] | None = None
) -> Decision[Verdict | CatalogVerdict]:
    """A session's verdict without a call (docs/model.md#without-a-call): an unhealthy
    handshake's own verdict first (``handshake``: an incompatible session's), else as its catalog
    decides it: ``converged`` when the catalog is, else the ``stale_catalog`` a call would get."""
    if handshake is not None:
        return Decision(handshake.verdict, handshake.reason, handshake.next_action)
    if catalog.verdict is CatalogVerdict.CONVERGED:
        return Decision(CatalogVerdict.CONVERGED, catalog.reason, catalog.next_action)
    stale = stale_catalog(catalog)  # a Decision[Verdict]: the fields, under the wider type
    return Decision(stale.verdict, stale.reason, stale.next_action)


def _own_failure_shows(c: ContractContext) -> bool:
    """The precedence exception: a catalog unverifiable only for want of any discovery of the
    server never hides the call's own failed layer (the later rules judge the call then)."""
    failed = c.layers.first_failed if c.layers is not None else FirstFailedLayer.NONE
    catalog = c.catalog
    return (
        catalog is not None
        and catalog.reason == Reason.NO_DISCOVERY
        and failed is not FirstFailedLayer.NONE
    )


def _effect_unknown(c: ContractContext) -> _D | None:
    layers = c.layers
    if layers is None or not (layers.silent and layers.side_effecting):
        return None
    if layers.reconciled is not None:
        return None
    return Decision(Verdict.EFFECT_UNKNOWN, layers.reason, NextAction.RECONCILE_BEFORE_RETRY)


def _reconciled_absent(c: ContractContext) -> _D | None:
    if c.layers is not None and c.layers.reconciled is False:
        return Decision(Verdict.TOOL_FAILED, Reason.EFFECT_ABSENT, NextAction.RETRY_WITHIN_BUDGET)
    return None


def _failed_at(
    c: ContractContext, layer: FirstFailedLayer, verdict: Verdict, action: NextAction
) -> _D | None:
    """``verdict`` with the layer's reason, when the call's first failed layer is ``layer``."""
    layers = _first_failed(c, layer)
    return None if layers is None else Decision(verdict, layers.reason, action)


def _transport_error(c: ContractContext) -> _D | None:
    return _failed_at(
        c, FirstFailedLayer.TRANSPORT, Verdict.TRANSPORT_ERROR, NextAction.RETRY_WITHIN_BUDGET
    )


def _protocol_error(c: ContractContext) -> _D | None:
    layers = _first_failed(c, FirstFailedLayer.PROTOCOL)
    if layers is None:
        return None
    action = layers.next_action or NextAction.FIX_REQUEST_CONTRACT
    return Decision(Verdict.PROTOCOL_ERROR, layers.reason, action)


def _tool_failed(c: ContractContext) -> _D | None:
    return _failed_at(c, FirstFailedLayer.EXECUTION, Verdict.TOOL_FAILED, NextAction.INSPECT_TOOL)


def _working(c: ContractContext) -> _D | None:
    if c.clock is not None and c.clock.live_state is LiveState.WORKING:
        return Decision(Verdict.WORKING, Reason.IN_FLIGHT, NextAction.NONE)
    return None


def _false_success(c: ContractContext) -> _D | None:
    return _failed_at(
        c, FirstFailedLayer.OUTCOME, Verdict.FALSE_SUCCESS, NextAction.VERIFY_DESTINATION
    )


def _all_passed(layers: CallLayers) -> bool:
    s = layers.statuses
    protocol_ok = s[Layer.PROTOCOL] is LayerStatus.PASSED or layers.reconciled is True
    return (
        not layers.failed
        and s[Layer.TRANSPORT] is LayerStatus.PASSED
        and s[Layer.AUTHORIZATION] in (LayerStatus.PASSED, LayerStatus.NOT_APPLICABLE)
        and protocol_ok
        and s[Layer.EXECUTION] is LayerStatus.PASSED
        and s[Layer.OUTCOME] is LayerStatus.PASSED
    )


def _healthy(c: ContractContext) -> _D | None:
    if c.layers is None or not _all_passed(c.layers) or c.layers.evidence_missing:
        return None
    if c.judge_session and (c.handshake is None or not c.handshake.compatible):
        return None
    return Decision(Verdict.HEALTHY, c.layers.reason, NextAction.NONE)


def _unverified(c: ContractContext) -> _D:
    reason: str
    if c.layers is None:
        reason = Reason.NO_CALL
    elif c.judge_session and (c.handshake is None or not c.handshake.compatible):
        reason = Reason.SESSION_UNOBSERVED
    else:
        reason = c.layers.reason
    return Decision(Verdict.UNVERIFIED, reason, NextAction.ADD_OUTCOME_VERIFIER)


VERDICT_RULES: tuple[Rule[ContractContext, Verdict], ...] = (
    Rule(
        "handshake_failed",
        (
            Verdict.TRANSPORT_ERROR,
            Verdict.NEEDS_AUTH,
            Verdict.INCOMPATIBLE_SESSION,
            Verdict.PROTOCOL_ERROR,
        ),
        "the handshake itself failed: the verdict of its first failed layer (never "
        "`stale_catalog`)",
        _handshake_failed,
    ),
    Rule(
        "needs_auth",
        (Verdict.NEEDS_AUTH,),
        "authorization failed (401 / `invalid_token` → `refresh_token_once`; 403 / "
        "`insufficient_scope` → `request_scope`)",
        _needs_auth,
    ),
    Rule(
        "incompatible_session",
        (Verdict.INCOMPATIBLE_SESSION,),
        "negotiated version unsupported by the client, -32022/-32021, or the `tools` "
        "capability missing",
        _incompatible,
    ),
    Rule(
        "stale_catalog",
        (Verdict.STALE_CATALOG,),
        "the called tool is not the approved one (`tool_unapproved`, `pins_unreadable` → "
        "`review_catalog_change`; first, and also for a call judged on its own), else the "
        "catalog verdict is not `converged` (no catalog evidence counts as `unverifiable`); "
        "a catalog `unverifiable` only for `no_discovery` never hides the call's own failed "
        "layer",
        _stale_catalog,
    ),
    Rule(
        "effect_unknown",
        (Verdict.EFFECT_UNKNOWN,),
        "silence (timeout, expired clock, lost connection / reset / process exit after a "
        "possible write) on a tool not annotated read-only, not reconciled; retry is blocked",
        _effect_unknown,
    ),
    Rule(
        "reconciled_absent",
        (Verdict.TOOL_FAILED,),
        "reconciliation confirmed the effect was not committed: now safe to retry",
        _reconciled_absent,
    ),
    Rule(
        "transport_error",
        (Verdict.TRANSPORT_ERROR,),
        "never reached the server, a definite HTTP error status, or a lost connection on a "
        "read-only tool",
        _transport_error,
    ),
    Rule(
        "protocol_error",
        (Verdict.PROTOCOL_ERROR,),
        "a JSON-RPC error response or a result violating the negotiated schema",
        _protocol_error,
    ),
    Rule(
        "tool_failed",
        (Verdict.TOOL_FAILED,),
        "`isError`, an output-schema violation, or a timeout on a read-only tool",
        _tool_failed,
    ),
    Rule(
        "working",
        (Verdict.WORKING,),
        "in flight and inside both clocks (idle window and absolute deadline)",
        _working,
    ),
    Rule(
        "false_success",
        (Verdict.FALSE_SUCCESS,),
        "no error, but the outcome verifier failed",
        _false_success,
    ),
    Rule(
        "healthy",
        (Verdict.HEALTHY,),
        "every layer passed, outcome included (a verifier receipt or the `not_required` "
        "policy), in a session observed to be compatible",
        _healthy,
    ),
    Rule(
        "unverified",
        (Verdict.UNVERIFIED,),
        "otherwise: every observed layer passed, but some evidence (usually the outcome "
        "receipt) is missing",
        _unverified,
    ),
)
