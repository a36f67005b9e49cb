"""Span attributes → core evidence records (private; verdicts → attributes: :mod:`._verdicts`).

A finished span's attributes and events become the same evidence records that
``otel-mcp-health classify`` reads from docs/evidence-format.md files, so the processor and the
offline classifier apply one set of rules.

Conventions kept from the evidence model: an absent attribute is *not observed*, never *passed*.
The one inference made here is authorization on a transport that has no authorization exchange
(``network.transport = pipe``, or an in-process session that records no transport at all): that
layer is ``not_applicable``, exactly like ``"authorization": null`` in an evidence file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import SpanKind

from otel_mcp_health import _sdkspan
from otel_mcp_health import attributes as A
from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.catalog import (
    MISSING_REQUIRED_ARGUMENT,
    UNKNOWN_TOOL_CALLED,
)
from otel_mcp_health.core.evidence import (
    NOT_APPLICABLE,
    AuthorizationEvidence,
    CallEvidence,
    EffectEvidence,
    ExecutionEvidence,
    HandshakeEvidence,
    NotApplicable,
    OutcomeEvidence,
    Page,
    ProgressEvent,
    ProgressEvidence,
    ProtocolEvidence,
    ToolCallCheck,
    TransportEvidence,
)
from otel_mcp_health.core.vocabulary import (
    AuthError,
    OutcomeResult,
    TransportOutcome,
)

Attributes = Mapping[str, Any]

#: Progress token written for notifications that matched the request's own token; any other value
#: stands for "a token of another request" (the instrumentation records only the match,
#: docs/model.md#privacy).
REQUEST_TOKEN = "request"
_OTHER_TOKEN = "other"
_PIPE = "pipe"
_CONTRACT_FINDINGS = {
    A.CONTRACT_UNKNOWN_TOOL: UNKNOWN_TOOL_CALLED,
    A.CONTRACT_MISSING_REQUIRED_ARGUMENT: MISSING_REQUIRED_ARGUMENT,
}


# ----------------------------------------------------------------------------------------------
# Small typed readers (attribute values come from an untyped mapping)
# ----------------------------------------------------------------------------------------------
def _str(attrs: Attributes, key: str) -> str | None:
    value = attrs.get(key)
    return value if isinstance(value, str) else None


def _bool(attrs: Attributes, key: str) -> bool | None:
    value = attrs.get(key)
    return value if isinstance(value, bool) else None


def _int(attrs: Attributes, key: str) -> int | None:
    value = attrs.get(key)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _float(attrs: Attributes, key: str) -> float | None:
    value = attrs.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _names(attrs: Attributes, key: str) -> tuple[str, ...]:
    value = attrs.get(key)
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, Sequence):
        return tuple(v for v in value if isinstance(v, str))
    return ()


# ----------------------------------------------------------------------------------------------
# Recognising our spans
# ----------------------------------------------------------------------------------------------
#: The instrumentation scope of every span the instrumentation records (its tracer's name).
INSTRUMENTATION_SCOPE = "otel_mcp_health.instrumentation"


_CLIENT = SpanKind.CLIENT


def carries_evidence(span: ReadableSpan) -> bool:
    """Whether the span carries our evidence, whichever library created it.

    Ours by scope (one attribute read, one compare: the whole cost of most non-MCP spans), or
    another library's CLIENT span that the instrumentation enriched instead of adding a second
    one (FastMCP's ``Client``, frameworks that trace MCP themselves): it carries our session key.
    """
    scope = span.instrumentation_scope
    if scope is not None and scope.name == INSTRUMENTATION_SCOPE:
        return True
    if span.kind is not _CLIENT:
        return False
    return A.SESSION_KEY in _sdkspan.attributes(span)


def session_key(attrs: Attributes) -> str | None:
    """The session key an MCP span carries (``mcp_health.session.key``)."""
    value = attrs.get(A.SESSION_KEY)
    return value if isinstance(value, str) else None


def method(attrs: Attributes) -> str | None:
    """``mcp.method.name``."""
    return _str(attrs, A.MCP_METHOD_NAME)


def is_application_page(attrs: Attributes) -> bool:
    """A ``tools/list`` page the application asked for (internal SDK lists never count)."""
    return _str(attrs, A.EVIDENCE_ORIGIN) != A.ORIGIN_INTERNAL


def server_identity(attrs: Attributes, fallback: str | None) -> str | None:
    """``address:port`` for a network server, else the server name learned at the handshake."""
    address = _str(attrs, A.SERVER_ADDRESS)
    if address is not None:
        port = _int(attrs, A.SERVER_PORT)
        return cap(f"{address}:{port}" if port is not None else address)
    name = _str(attrs, A.SERVER_NAME)
    return cap(name) if name is not None else fallback


def has_network(attrs: Attributes) -> bool:
    """Whether the session talks to its server over a network (``tcp``)."""
    transport = _str(attrs, A.NETWORK_TRANSPORT)
    return transport is not None and transport != _PIPE


# ----------------------------------------------------------------------------------------------
# Spans → evidence
# ----------------------------------------------------------------------------------------------
def transport_evidence(attrs: Attributes) -> TransportEvidence | None:
    """``mcp_health.transport.*`` and the HTTP status; ``None`` when no outcome was recorded."""
    outcome = _str(attrs, A.TRANSPORT_OUTCOME)
    if outcome is None:
        return None
    try:
        parsed = TransportOutcome(outcome)
    except ValueError:
        return None
    return TransportEvidence(
        outcome=parsed,
        http_status=_int(attrs, A.HTTP_RESPONSE_STATUS_CODE),
        request_written=_bool(attrs, A.TRANSPORT_REQUEST_WRITTEN),
    )


def authorization_evidence(attrs: Attributes) -> AuthorizationEvidence | NotApplicable | None:
    """``not_applicable`` off the network; else the HTTP status, RFC 6750 code and scope names."""
    if not has_network(attrs):
        return NOT_APPLICABLE
    status = _int(attrs, A.HTTP_RESPONSE_STATUS_CODE)
    code = _str(attrs, A.AUTH_ERROR)
    error: AuthError | None = None
    if code is not None:
        try:
            error = AuthError(code)
        except ValueError:
            error = None
    if status is None and error is None:
        return None
    return AuthorizationEvidence(
        http_status=status, error=error, scope=_names(attrs, A.AUTH_REQUIRED_SCOPES)
    )


def _protocol(attrs: Attributes) -> ProtocolEvidence | None:
    code = _int(attrs, A.RPC_RESPONSE_STATUS_CODE)
    if code is None and A.RPC_RESPONSE_STATUS_CODE in attrs:
        return None  # an error response with an unreadable code: not observed, never passed
    valid = _bool(attrs, A.PROTOCOL_RESULT_VALID)
    if code is None and valid is None and A.CALL_IS_ERROR not in attrs:
        return None
    return ProtocolEvidence(error_code=code, result_valid=valid)


def _execution(attrs: Attributes) -> ExecutionEvidence | None:
    is_error = _bool(attrs, A.CALL_IS_ERROR)
    timed_out = _bool(attrs, A.CALL_TIMED_OUT)
    schema = _bool(attrs, A.CALL_OUTPUT_SCHEMA_VALID)
    if is_error is None and timed_out is None and schema is None:
        return None
    return ExecutionEvidence(
        is_error=is_error, timed_out=timed_out is True, output_schema_valid=schema
    )


def effect_evidence(attrs: Attributes) -> EffectEvidence | None:
    """Reconciliation evidence (``mcp_health.effect.*``), or ``None``."""
    observed = _bool(attrs, A.EFFECT_OBSERVED)
    if observed is None:
        return None
    return EffectEvidence(observed=observed, method=_str(attrs, A.EFFECT_METHOD) or "unknown")


def outcome_evidence(attrs: Attributes) -> OutcomeEvidence | None:
    """An outcome receipt (``mcp_health.outcome.*``), or ``None`` (no verifier)."""
    method_ = _str(attrs, A.OUTCOME_METHOD)
    if method_ is None:
        return None
    result = _str(attrs, A.OUTCOME_RESULT)
    passed = {OutcomeResult.PASSED.value: True, OutcomeResult.FAILED.value: False}.get(result or "")
    return OutcomeEvidence(
        method=method_, passed=passed, confidence=_float(attrs, A.OUTCOME_CONFIDENCE)
    )


def call_evidence(attrs: Attributes) -> CallEvidence:
    """A ``tools/call`` span's attributes as a docs/evidence-format.md ``call`` record."""
    return CallEvidence(
        tool=_str(attrs, A.GEN_AI_TOOL_NAME),
        read_only=_bool(attrs, A.TOOL_READ_ONLY),
        transport=transport_evidence(attrs),
        authorization=authorization_evidence(attrs),
        protocol=_protocol(attrs),
        execution=_execution(attrs),
        effect=effect_evidence(attrs),
        outcome=outcome_evidence(attrs),
        missing=_names(attrs, A.EVIDENCE_MISSING),
    )


def tool_call_check(attrs: Attributes) -> ToolCallCheck | None:
    """The call-time contract finding of a ``tools/call`` span (``None`` when it passed)."""
    finding = _CONTRACT_FINDINGS.get(_str(attrs, A.CALL_CONTRACT) or "")
    if finding is None:
        return None
    return ToolCallCheck(
        name=_str(attrs, A.GEN_AI_TOOL_NAME) or "",
        contract=finding,
        missing=_names(attrs, A.CALL_MISSING_ARGUMENTS),
    )


def handshake_evidence(
    attrs: Attributes, supported_versions: tuple[str, ...] | None
) -> HandshakeEvidence:
    """An ``initialize`` / ``server/discover`` span as the handshake of a session record."""
    capabilities: dict[str, Any] | None = None
    tools = _bool(attrs, A.SESSION_CAPABILITY_TOOLS)
    if tools is not None:
        capabilities = {}
        if tools:
            list_changed = _bool(attrs, A.SESSION_CAPABILITY_TOOLS_LIST_CHANGED) is True
            capabilities["tools"] = {"listChanged": list_changed}
    return HandshakeEvidence(
        requested_version=_str(attrs, A.SESSION_REQUESTED_VERSION),
        negotiated_version=_str(attrs, A.MCP_PROTOCOL_VERSION),
        error_code=_int(attrs, A.RPC_RESPONSE_STATUS_CODE),
        capabilities=capabilities,
        supported_versions=supported_versions,
        transport=transport_evidence(attrs),
        authorization=authorization_evidence(attrs),
    )


def page(attrs: Attributes) -> Page:
    """One ``tools/list`` page: cursor hashes (opaque keys) and failure."""
    code = _int(attrs, A.RPC_RESPONSE_STATUS_CODE)
    failed = code is not None or A.ERROR_TYPE in attrs
    return Page(
        cursor=_str(attrs, A.CATALOG_PAGE_CURSOR_HASH),
        next_cursor=_str(attrs, A.CATALOG_PAGE_NEXT_CURSOR_HASH),
        failed=failed,
        error_code=code,
    )


def progress_evidence(
    attrs: Attributes,
    events: Iterable[Event],
    *,
    started_at: int | None,
    now: int | None,
    completed_at: int | None,
) -> ProgressEvidence:
    """The two clocks of a call and its ``mcp_health.progress`` events.

    ``completed_at=None`` means the call is still in flight (the live gauge); a finished span
    passes its end time so that progress after the response counts as late.
    """
    collected = tuple(
        ProgressEvent(
            at=event.timestamp,
            token=REQUEST_TOKEN
            if (event.attributes or {}).get(A.PROGRESS_TOKEN_MATCH) is not False
            else _OTHER_TOKEN,
            progress=_float(event.attributes or {}, A.PROGRESS_VALUE) or 0.0,
            total=_float(event.attributes or {}, A.PROGRESS_TOTAL),
        )
        for event in events
        if event.name == A.PROGRESS_EVENT
    )
    return ProgressEvidence(
        now=now,
        started_at=started_at,
        completed_at=completed_at,
        in_flight=completed_at is None,
        idle_window_seconds=_float(attrs, A.CALL_IDLE_WINDOW_S),
        deadline_seconds=_float(attrs, A.CALL_DEADLINE_S),
        request_token=REQUEST_TOKEN,
        events=collected,
    )
