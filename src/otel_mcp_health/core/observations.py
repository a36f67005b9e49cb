"""From what was seen of one request to its evidence records (pure).

The instrumentation keeps the facts its hooks saw while a request is open and writes none of
them then. When the request ends, :func:`otel_mcp_health.core.fold.fold` folds them into an
:class:`Observed` (one precedence table, docs/architecture.md#precedence), :func:`request_evidence`
builds the records of :mod:`.evidence` from it in one step, and the codec writes those once
(docs/attributes.md). In-memory questions about a call (did it go
silent? :func:`otel_mcp_health.core.layers.is_silent`) read the same records, so one set of rules
answers both.
"""

from __future__ import annotations

from dataclasses import dataclass

from otel_mcp_health.core.evidence import (
    NOT_APPLICABLE,
    AuthorizationEvidence,
    CallEvidence,
    ExecutionEvidence,
    NotApplicable,
    OutcomeEvidence,
    ProtocolEvidence,
    RequestEvidence,
    TransportEvidence,
)
from otel_mcp_health.core.vocabulary import AuthError, TransportOutcome

_OUTCOMES = {outcome.value: outcome for outcome in TransportOutcome}
#: The one network transport with an authorization exchange (docs/model.md#layers).
_TCP = "tcp"


@dataclass(slots=True, eq=False, kw_only=True)
class Observed:
    """Raw observations of one outbound request; ``None`` = not (yet) observed."""

    method: str
    tool_name: str | None = None
    #: The tool's ``readOnlyHint`` at call time (last complete discovery).
    read_only: bool | None = None
    request_id: str | None = None
    # transport / authorization (the HTTP hooks fill these in)
    http_status: int | None = None
    http_json_body: bool = False
    auth_error: AuthError | None = None
    auth_scope: tuple[str, ...] = ()
    transport_outcome: str | None = None
    written: bool | None = None
    #: Whether the SDK started writing the request: ``None`` where it cannot be seen (the direct
    #: in-process dispatcher), ``False`` once the SDK's span block began, ``True`` at the write.
    write_started: bool | None = None
    #: A response (result or error envelope) arrived.
    answered: bool = False
    # protocol / execution / outcome
    error_code: int | None = None
    result_valid: bool | None = None
    is_error: bool | None = None
    timed_out: bool = False
    output_schema_valid: bool | None = None
    cancelled: bool = False
    outcome: OutcomeEvidence | None = None
    error_type: str | None = None
    exception_type: str | None = None


def request_evidence(
    seen: Observed, *, network: str | None, missing: tuple[str, ...] = ()
) -> RequestEvidence:
    """The evidence records of a request as it ends (``network``: the session's transport)."""
    transport = _transport(seen)
    call = CallEvidence(
        tool=seen.tool_name if seen.method == "tools/call" else None,
        read_only=seen.read_only,
        transport=transport,
        authorization=_authorization(seen, network),
        protocol=_protocol(seen),
        execution=_execution(seen),
        outcome=seen.outcome,
        missing=missing,
    )
    return RequestEvidence(
        call=call,
        request_id=seen.request_id,
        request_written=seen.written if transport is None else None,
        cancelled=seen.cancelled,
        error_type=seen.error_type,
    )


def _transport(seen: Observed) -> TransportEvidence | None:
    outcome = _OUTCOMES.get(seen.transport_outcome or "")
    if outcome is None:
        return None
    return TransportEvidence(
        outcome=outcome, http_status=seen.http_status, request_written=seen.written
    )


def _authorization(
    seen: Observed, network: str | None
) -> AuthorizationEvidence | NotApplicable | None:
    if network != _TCP:
        return NOT_APPLICABLE
    if seen.http_status is None and seen.auth_error is None:
        return None
    return AuthorizationEvidence(
        http_status=seen.http_status, error=seen.auth_error, scope=seen.auth_scope
    )


def _protocol(seen: Observed) -> ProtocolEvidence | None:
    if seen.error_code is None and seen.result_valid is None:
        return None
    return ProtocolEvidence(error_code=seen.error_code, result_valid=seen.result_valid)


def _execution(seen: Observed) -> ExecutionEvidence | None:
    if seen.is_error is None and not seen.timed_out and seen.output_schema_valid is None:
        return None
    return ExecutionEvidence(
        is_error=seen.is_error,
        timed_out=seen.timed_out,
        output_schema_valid=seen.output_schema_valid,
    )
