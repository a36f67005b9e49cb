"""Evidence of one exchange and one ``tools/call``: transport, authorization, protocol, execution,
effect, outcome, the call record and its call-time contract finding (docs/attributes.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from otel_mcp_health import attributes as A
from otel_mcp_health._codec.approval import decode_call_approval
from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.evidence import (
    NOT_APPLICABLE,
    AuthorizationEvidence,
    CallEvidence,
    EffectEvidence,
    ExecutionEvidence,
    NotApplicable,
    OutcomeEvidence,
    ProtocolEvidence,
    RequestEvidence,
    ToolCallCheck,
    TransportEvidence,
)
from otel_mcp_health.core.reasons import Reason
from otel_mcp_health.core.vocabulary import (
    AuthError,
    CallApproval,
    OutcomeResult,
    TransportOutcome,
)

from ._read import Attributes, present, read_bool, read_float, read_int, read_names, read_str

PIPE = "pipe"
TCP = "tcp"
_CONTRACT_FINDINGS = {
    A.CONTRACT_UNKNOWN_TOOL: Reason.UNKNOWN_TOOL_CALLED,
    A.CONTRACT_MISSING_REQUIRED_ARGUMENT: Reason.MISSING_REQUIRED_ARGUMENT,
}
_CONTRACT_VALUES: dict[str, str] = {finding: value for value, finding in _CONTRACT_FINDINGS.items()}
_OUTCOME_PASSED = {OutcomeResult.PASSED.value: True, OutcomeResult.FAILED.value: False}


def encode_rpc_code(code: int) -> str:
    """A JSON-RPC error code as written: a (bounded) string, the way ``error.type`` carries it."""
    return cap(str(code))


# ----------------------------------------------------------------------------------------------
# Transport and authorization
# ----------------------------------------------------------------------------------------------
def encode_delivery(outcome: str | None, written: bool | None) -> dict[str, Any]:
    """What the transport did with the request, as far as it was observed (a
    ``TransportOutcome`` value; without one the transport layer decodes as not observed)."""
    return present({A.TRANSPORT_OUTCOME: outcome, A.TRANSPORT_REQUEST_WRITTEN: written})


def encode_transport(transport: TransportEvidence) -> dict[str, Any]:
    attrs = encode_delivery(transport.outcome.value, transport.request_written)
    if transport.http_status is not None:
        attrs[A.HTTP_RESPONSE_STATUS_CODE] = transport.http_status
    return attrs


def decode_transport(attrs: Attributes) -> TransportEvidence | None:
    """``mcp_health.transport.*`` and the HTTP status; ``None`` when no outcome was recorded."""
    outcome = read_str(attrs, A.TRANSPORT_OUTCOME)
    if outcome is None:
        return None
    try:
        parsed = TransportOutcome(outcome)
    except ValueError:
        return None
    return TransportEvidence(
        outcome=parsed,
        http_status=read_int(attrs, A.HTTP_RESPONSE_STATUS_CODE),
        request_written=read_bool(attrs, A.TRANSPORT_REQUEST_WRITTEN),
    )


def encode_network() -> dict[str, Any]:
    """A session over a network, where the authorization layer applies (else: no attribute, or
    ``pipe`` from the connection attributes)."""
    return {A.NETWORK_TRANSPORT: TCP}


def has_network(attrs: Attributes) -> bool:
    """Whether the session talks to its server over a network (``tcp``)."""
    transport = read_str(attrs, A.NETWORK_TRANSPORT)
    return transport is not None and transport != PIPE


def encode_authorization(authorization: AuthorizationEvidence) -> dict[str, Any]:
    """The HTTP status and ``WWW-Authenticate`` challenge (the network: :func:`encode_network`)."""
    attrs: dict[str, Any] = {}
    if authorization.http_status is not None:
        attrs[A.HTTP_RESPONSE_STATUS_CODE] = authorization.http_status
    if authorization.error is not None:
        attrs[A.AUTH_ERROR] = authorization.error.value
    if authorization.scope:
        attrs[A.AUTH_REQUIRED_SCOPES] = list(authorization.scope)
    return attrs


def decode_authorization(attrs: Attributes) -> AuthorizationEvidence | NotApplicable | None:
    """``not_applicable`` off the network; else the HTTP status, RFC 6750 code and scope names."""
    if not has_network(attrs):
        return NOT_APPLICABLE
    status = read_int(attrs, A.HTTP_RESPONSE_STATUS_CODE)
    code = read_str(attrs, A.AUTH_ERROR)
    error: AuthError | None = None
    if code is not None:
        try:
            error = AuthError(code)
        except ValueError:
            error = None
    if status is None and error is None:
        return None
    return AuthorizationEvidence(
        http_status=status, error=error, scope=read_names(attrs, A.AUTH_REQUIRED_SCOPES)
    )


def encode_exchange(
    transport: TransportEvidence | None,
    authorization: AuthorizationEvidence | NotApplicable | None,
) -> dict[str, Any]:
    """Transport and authorization of one exchange (they share the HTTP status)."""
    attrs = {} if authorization is NOT_APPLICABLE else encode_network()
    if isinstance(authorization, AuthorizationEvidence):
        attrs.update(encode_authorization(authorization))
    if transport is not None:
        attrs.update(encode_transport(transport))
    return attrs


# ----------------------------------------------------------------------------------------------
# One tools/call
# ----------------------------------------------------------------------------------------------
def encode_protocol(protocol: ProtocolEvidence) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if protocol.error_code is not None:
        attrs[A.RPC_RESPONSE_STATUS_CODE] = encode_rpc_code(protocol.error_code)
    if protocol.result_valid is not None:
        attrs[A.PROTOCOL_RESULT_VALID] = protocol.result_valid
    return attrs


def decode_protocol(attrs: Attributes) -> ProtocolEvidence | None:
    code = read_int(attrs, A.RPC_RESPONSE_STATUS_CODE)
    if code is None and A.RPC_RESPONSE_STATUS_CODE in attrs:
        return None  # an error response with an unreadable code: not observed, never passed
    valid = read_bool(attrs, A.PROTOCOL_RESULT_VALID)
    if code is None and valid is None and read_bool(attrs, A.CALL_IS_ERROR) is None:
        return None  # no error, no validity, no result envelope: not observed
    return ProtocolEvidence(error_code=code, result_valid=valid)


def encode_execution(execution: ExecutionEvidence) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if execution.is_error is not None:
        attrs[A.CALL_IS_ERROR] = execution.is_error
    if execution.timed_out:
        attrs[A.CALL_TIMED_OUT] = True
    if execution.output_schema_valid is not None:
        attrs[A.CALL_OUTPUT_SCHEMA_VALID] = execution.output_schema_valid
    return attrs


def decode_execution(attrs: Attributes) -> ExecutionEvidence | None:
    is_error = read_bool(attrs, A.CALL_IS_ERROR)
    timed_out = read_bool(attrs, A.CALL_TIMED_OUT)
    schema = read_bool(attrs, A.CALL_OUTPUT_SCHEMA_VALID)
    if is_error is None and timed_out is not True and schema is None:
        return None  # only a timeout is written (never "not timed out"): nothing observed
    return ExecutionEvidence(
        is_error=is_error, timed_out=timed_out is True, output_schema_valid=schema
    )


def encode_effect(effect: EffectEvidence) -> dict[str, Any]:
    return {A.EFFECT_OBSERVED: effect.observed, A.EFFECT_METHOD: effect.method}


def decode_effect(attrs: Attributes) -> EffectEvidence | None:
    """Reconciliation evidence (``mcp_health.effect.*``), or ``None``."""
    observed = read_bool(attrs, A.EFFECT_OBSERVED)
    if observed is None:
        return None
    return EffectEvidence(observed=observed, method=read_str(attrs, A.EFFECT_METHOD) or "unknown")


def encode_receipt(
    method: str, result: OutcomeResult | None, confidence: float | None
) -> dict[str, Any]:
    """A verifier's receipt (``inconclusive`` decodes like no result: ``passed`` unknown)."""
    attrs: dict[str, Any] = {A.OUTCOME_METHOD: method}
    if result is not None:
        attrs[A.OUTCOME_RESULT] = result.value
    if confidence is not None:
        attrs[A.OUTCOME_CONFIDENCE] = float(confidence)
    return attrs


def encode_outcome(outcome: OutcomeEvidence) -> dict[str, Any]:
    result = None
    if outcome.passed is not None:
        result = OutcomeResult.PASSED if outcome.passed else OutcomeResult.FAILED
    return encode_receipt(outcome.method, result, outcome.confidence)


def decode_outcome(attrs: Attributes) -> OutcomeEvidence | None:
    """An outcome receipt (``mcp_health.outcome.*``), or ``None`` (no verifier)."""
    method_ = read_str(attrs, A.OUTCOME_METHOD)
    if method_ is None:
        return None
    passed = _OUTCOME_PASSED.get(read_str(attrs, A.OUTCOME_RESULT) or "")
    return OutcomeEvidence(
        method=method_, passed=passed, confidence=read_float(attrs, A.OUTCOME_CONFIDENCE)
    )


def encode_call(call: CallEvidence) -> dict[str, Any]:
    """A docs/evidence-format.md ``call`` record as the attributes of its ``tools/call`` span."""
    attrs = encode_exchange(call.transport, call.authorization)
    if call.tool is not None:
        attrs[A.GEN_AI_TOOL_NAME] = call.tool
    if call.read_only is not None:
        attrs.update(encode_read_only(call.read_only))
    if call.protocol is not None:
        attrs.update(encode_protocol(call.protocol))
    if call.execution is not None:
        attrs.update(encode_execution(call.execution))
    if call.effect is not None:
        attrs.update(encode_effect(call.effect))
    if call.outcome is not None:
        attrs.update(encode_outcome(call.outcome))
    attrs.update(encode_missing(call.missing))
    if call.unapproved is not None:
        attrs.update(encode_unapproved(call.unapproved))
    return attrs


def encode_unapproved(reason: str) -> dict[str, Any]:
    """A call whose tool's current definition is not approved, and why (docs/model.md#approval)."""
    return {A.CALL_APPROVAL: CallApproval.UNAPPROVED.value, A.CALL_APPROVAL_REASON: reason}


def encode_missing(missing: tuple[str, ...]) -> dict[str, Any]:
    """Evidence the SDK in use cannot give (docs/attributes.md): absent when none is missing."""
    return {A.EVIDENCE_MISSING: missing} if missing else {}


def decode_call(attrs: Attributes) -> CallEvidence:
    """A ``tools/call`` span's attributes as a docs/evidence-format.md ``call`` record."""
    return CallEvidence(
        tool=read_str(attrs, A.GEN_AI_TOOL_NAME),
        read_only=read_bool(attrs, A.TOOL_READ_ONLY),
        transport=decode_transport(attrs),
        authorization=decode_authorization(attrs),
        protocol=decode_protocol(attrs),
        execution=decode_execution(attrs),
        effect=decode_effect(attrs),
        outcome=decode_outcome(attrs),
        missing=read_names(attrs, A.EVIDENCE_MISSING),
        unapproved=decode_call_approval(attrs),
    )


def encode_request(request: RequestEvidence) -> dict[str, Any]:
    """A request's evidence as it ended: the attributes its span gets, in one write, at its end."""
    attrs = encode_call(request.call)
    if request.call.transport is None:
        attrs.update(encode_delivery(None, request.request_written))
    if request.cancelled:
        attrs.update(encode_cancelled())
    if request.error_type is not None:
        attrs[A.ERROR_TYPE] = request.error_type
    attrs.update(encode_request_id(request.request_id))
    return attrs


def encode_request_id(request_id: str | None) -> dict[str, Any]:
    """The request's JSON-RPC id (absent: never learned), the last of its request record."""
    return {A.JSONRPC_REQUEST_ID: request_id} if request_id is not None else {}


def encode_read_only(read_only: bool) -> dict[str, Any]:
    """The tool's ``readOnlyHint`` at call time (part of the call record)."""
    return {A.TOOL_READ_ONLY: read_only}


def encode_contract(finding: str | None, missing: Iterable[str] = ()) -> dict[str, Any]:
    """The call-time contract check: a finding and its missing names, or ``None`` (it passed)."""
    if finding is None:
        return {A.CALL_CONTRACT: A.CONTRACT_OK}
    attrs: dict[str, Any] = {A.CALL_CONTRACT: _CONTRACT_VALUES[finding]}
    missing = list(missing)
    if missing:
        attrs[A.CALL_MISSING_ARGUMENTS] = missing
    return attrs


def encode_tool_call_check(check: ToolCallCheck) -> dict[str, Any]:
    """A call-time contract finding (``contract`` one of the findings the check makes)."""
    attrs: dict[str, Any] = {A.GEN_AI_TOOL_NAME: check.name}
    attrs.update(encode_contract(check.contract or "", check.missing))
    return attrs


def decode_tool_call_check(attrs: Attributes) -> ToolCallCheck | None:
    """The call-time contract finding of a ``tools/call`` span (``None`` when it passed)."""
    finding = _CONTRACT_FINDINGS.get(read_str(attrs, A.CALL_CONTRACT) or "")
    if finding is None:
        return None
    return ToolCallCheck(
        name=read_str(attrs, A.GEN_AI_TOOL_NAME) or "",
        contract=finding,
        missing=read_names(attrs, A.CALL_MISSING_ARGUMENTS),
    )


# In-flight flags of a request span: set while it is open, read by the processor.
def encode_waiting_for_user(waiting: bool) -> dict[str, Any]:
    """The server asked the user (elicitation) and the call waits for the answer."""
    return {A.CALL_WAITING_FOR_USER: waiting}


def decode_waiting_for_user(attrs: Attributes) -> bool:
    return read_bool(attrs, A.CALL_WAITING_FOR_USER) is True


def encode_pending() -> dict[str, Any]:
    """The call's outcome receipt is still to come: the processor holds the span for it."""
    return {A.OUTCOME_PENDING: True}


def decode_pending(attrs: Attributes) -> bool:
    return read_bool(attrs, A.OUTCOME_PENDING) is True


def encode_cancelled() -> dict[str, Any]:
    """The host stopped waiting for the answer (docs/model.md#silence)."""
    return {A.CALL_CANCELLED: True}


def decode_cancelled(attrs: Attributes) -> bool:
    return read_bool(attrs, A.CALL_CANCELLED) is True
