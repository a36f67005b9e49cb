"""Evidence as a pure fold: the facts of one request in, its records out.

The instrumentation's hooks decide nothing. Each appends what it saw to its request, in the order
it saw it (:mod:`.facts`): an HTTP response, an HTTP failure, the SDK's span block entered or
left, the write, a result, an exception the request raised, a handshake or ``tools/list`` page
result, the output-schema check, the outcome policy. When the request ends, :func:`fold` reads
each fact as one row of :data:`PRECEDENCE` and writes its values into the request's observations
(:class:`Folded`: :class:`~.observations.Observed` plus the handshake and the page), and
:func:`records` builds the call, handshake and page records from them; the codec writes each
once. Nothing here reads a clock or does I/O.

The precedence table, which decides whose value wins, is data: :mod:`.precedence`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.evidence import CallEvidence, HandshakeEvidence, RequestEvidence
from otel_mcp_health.core.facts import (
    Fact,
    Failure,
    HandshakeResult,
    HttpFailure,
    HttpResponse,
    Outcome,
    OutputSchema,
    PageResult,
    Raised,
    Result,
    SdkEntered,
    SdkExit,
    WriteStarted,
)
from otel_mcp_health.core.observations import Observed, request_evidence
from otel_mcp_health.core.precedence import EXCEPTION_TYPE as _EXC
from otel_mcp_health.core.precedence import FIRST_CLASSIFICATION, PRECEDENCE, Overwrite
from otel_mcp_health.core.vocabulary import AUTH_CHALLENGE_STATUSES, AuthError, TransportOutcome

_OK = TransportOutcome.OK.value
#: ``error.type`` of a ``CallToolResult`` with ``isError: true`` and of a request that hit its
#: deadline (the same values as ``attributes.ERROR_TYPE_TOOL_ERROR`` / ``ERROR_TYPE_TIMEOUT``).
TOOL_ERROR: Final = "tool_error"
TIMEOUT: Final = "timeout"


class _FailureOr(NamedTuple):
    """A value read when the row is applied: the recorded transport failure, else ``fallback``."""

    fallback: str | None


@dataclass(slots=True, eq=False, kw_only=True)
class Folded(Observed):
    """A request's observations after its facts, with what the records need besides."""

    sdk_entered: bool = False
    session_id: str | None = None
    handshake: HandshakeResult | None = None
    page: PageResult | None = None


# ----------------------------------------------------------------------------------------------
# Readings: what a fact says, given what came before
# ----------------------------------------------------------------------------------------------
Reading = tuple[str, dict[str, Any]]


def _http_response(fact: HttpResponse, seen: Folded, network: str | None) -> Reading:
    failed = fact.status >= 500
    values: dict[str, Any] = {
        "http_status": fact.status,
        "http_json_body": fact.json_body,
        "transport_outcome": TransportOutcome.HTTP_ERROR.value if failed else _OK,
        "written": True,
        "auth_error": fact.auth_error,
        "auth_scope": fact.scope,
    }
    if fact.session_id is not None:
        values["session_id"] = fact.session_id
    return "http_response", values


def _http_failure(fact: HttpFailure, seen: Folded, network: str | None) -> Reading:
    exc = fact.exception_type
    if fact.status is not None:
        rejected = {"answered": True, "error_type": str(fact.status), _EXC: exc}
        if seen.http_json_body:
            # The body may be the server's own JSON-RPC error (mcp 1.x raised before reading
            # it): not ours to call a transport failure.
            return "http_rejected", rejected
        return "http_rejected", {**rejected, **_refused(fact.status)}
    if fact.oauth:  # the OAuth flow starts from the server's 401/403: the exchange itself worked
        return "oauth_failed", {
            "auth_error": AuthError.OAUTH_ERROR,
            "error_type": AuthError.OAUTH_ERROR.value,
            "transport_outcome": fact.outcome or _OK,
            "written": True if fact.written is None else fact.written,
            _EXC: exc,
        }
    values: dict[str, Any] = {}
    if fact.outcome is not None:
        values["transport_outcome"] = values["error_type"] = fact.outcome
    if fact.written is not None:
        values["written"] = fact.written
    values[_EXC] = exc
    return "transport_failed", values


def _sdk_entered(fact: SdkEntered, seen: Folded, network: str | None) -> Reading:
    values: dict[str, Any] = {"sdk_entered": True}
    if fact.write_visible:
        values["write_started"] = False  # the SDK enters its span block before it writes
    return "sdk_entered", values


def _write_started(fact: WriteStarted, seen: Folded, network: str | None) -> Reading:
    return "write_started", {"write_started": True}


def _sdk_exit(fact: SdkExit, seen: Folded, network: str | None) -> Reading | None:
    if fact.failure is None:  # the write succeeded and an outcome arrived
        return "sdk_exit", {"written": True}
    if fact.failure is Failure.CLOSED:  # the write failed on a torn-down transport
        return "sdk_exit_closed", {"written": False}
    return None


def _result(fact: Result, seen: Folded, network: str | None) -> Reading:
    values: dict[str, Any] = {"answered": True, "written": True, "transport_outcome": _OK}
    if fact.is_error is not None:
        values["is_error"] = fact.is_error
        if fact.is_error:
            values["error_type"] = TOOL_ERROR
    return "result", values


def _raised(fact: Raised, seen: Folded, network: str | None) -> Reading:
    exc = fact.exception_type
    if fact.failure is Failure.TIMEOUT:  # delivered; only the answer did not come in time
        values = {"timed_out": True, "written": True, "transport_outcome": _OK}
        return "timeout", {_EXC: exc, **values, "error_type": TIMEOUT}
    if fact.failure is Failure.CLOSED:
        return "closed", _closed(exc, seen, network)
    if fact.failure is Failure.RPC:
        return _rpc_error(fact, seen)
    if fact.failure is Failure.CANCELLED:
        return "cancelled", _cancelled(exc, seen)
    if fact.failure is Failure.INVALID:
        return "invalid_result", {_EXC: exc, "result_valid": False, "error_type": exc}
    return "raised", {_EXC: exc, "error_type": _FailureOr(exc)}


def _closed(exc: str, seen: Folded, network: str | None) -> dict[str, Any]:
    values: dict[str, Any] = {_EXC: exc}
    if not seen.sdk_entered and seen.http_status is None:
        values["written"] = False  # refused before anything was sent (session already closed)
    pipe = network == "pipe"
    lost = TransportOutcome.PROCESS_EXIT if pipe else TransportOutcome.CONNECTION_LOST
    values["transport_outcome"] = lost.value
    values["error_type"] = _FailureOr(None)
    return values


def _refused(status: int) -> dict[str, Any]:
    """An error status that is the whole answer (no JSON-RPC envelope came): the transport
    failed (``http_error``; docs/model.md#layers), unless it is an authorization challenge, which
    the authorization layer judges."""
    if status in AUTH_CHALLENGE_STATUSES:
        return {}
    return {"transport_outcome": TransportOutcome.HTTP_ERROR.value}


def _rpc_error(fact: Raised, seen: Folded) -> Reading:
    exc, status, code = fact.exception_type, seen.http_status, fact.code
    if status is not None and status >= 300 and not seen.http_json_body:
        # The SDK collapsed an HTTP error status into a JSON-RPC code it made up: keep the status.
        values = {_EXC: exc, "answered": True, "error_type": str(status)}
        return "http_collapsed", {**values, **_refused(status)}
    code_type = cap(str(code))
    values = {"answered": True, "transport_outcome": _OK, "written": True, "error_code": code}
    return "rpc_error", {_EXC: exc, **values, "error_type": code_type}


def _cancelled(exc: str, seen: Folded) -> dict[str, Any]:
    """The host stopped waiting (docs/model.md#silence): whoever stopped waiting, silence after a
    possible write is silence, recorded as a timeout; before the write there was no call."""
    values: dict[str, Any] = {_EXC: exc, "cancelled": True, "error_type": exc}
    if seen.answered:
        return values  # the answer had arrived: the host only abandoned what came after it
    if seen.write_started is False or seen.written is False:
        values["written"] = False
        return values
    values["timed_out"] = True
    if seen.written is True:
        values["transport_outcome"] = _OK
    return values


def _as(name: str) -> Callable[[Any, Folded, str | None], Reading]:
    return lambda fact, seen, network: (name, {name: fact})


def _outcome(fact: Outcome, seen: Folded, network: str | None) -> Reading:
    return "outcome", {"outcome": fact.outcome}


def _output_schema(fact: OutputSchema, seen: Folded, network: str | None) -> Reading:
    return "output_schema", {"output_schema_valid": fact.valid}


_READINGS: Final[Mapping[type, Callable[[Any, Folded, str | None], Reading | None]]] = {
    HttpResponse: _http_response,
    HttpFailure: _http_failure,
    SdkEntered: _sdk_entered,
    WriteStarted: _write_started,
    SdkExit: _sdk_exit,
    Result: _result,
    Raised: _raised,
    OutputSchema: _output_schema,
    Outcome: _outcome,
    HandshakeResult: _as("handshake"),
    PageResult: _as("page"),
}


# ----------------------------------------------------------------------------------------------
# The fold and the records
# ----------------------------------------------------------------------------------------------
def fold(seed: Observed, facts: Iterable[Fact], *, network: str | None) -> Folded:
    """The request's observations after its facts, in order (``seed``: what was known before it
    was sent; ``network``: the session's transport)."""
    seen = Folded(
        method=seed.method,
        tool_name=seed.tool_name,
        read_only=seed.read_only,
        request_id=seed.request_id,
    )
    for fact in facts:
        reading = _READINGS[type(fact)](fact, seen, network)
        if reading is not None:
            _apply(seen, *reading)
    return seen


def _apply(seen: Folded, row: str, values: dict[str, Any]) -> None:
    if row in FIRST_CLASSIFICATION and seen.error_type is not None:
        return
    rules = PRECEDENCE[row]
    for name, proposed in values.items():
        value = proposed
        if isinstance(proposed, _FailureOr):
            failure = seen.transport_outcome not in (None, _OK)
            value = seen.transport_outcome if failure else proposed.fallback
        rule, current = rules[name], getattr(seen, name)
        if (
            (rule is Overwrite.KEEP and current is not None)
            or (rule is Overwrite.OVER_OK and current not in (None, _OK))
            or (rule is Overwrite.NEXT and current is not False)
        ):
            continue
        setattr(seen, name, value)


@dataclass(frozen=True, slots=True)
class Records:
    """What a request's span gets when it ends: its observations and the records built from them."""

    seen: Folded
    request: RequestEvidence
    handshake: HandshakeEvidence | None
    page: PageResult | None


def records(
    seed: Observed,
    facts: Iterable[Fact],
    *,
    network: str | None,
    missing: tuple[str, ...] = (),
) -> Records:
    """Fold the facts and build the call, handshake and page records of the request."""
    seen = fold(seed, facts, network=network)
    request = request_evidence(seen, network=network, missing=missing)
    return Records(seen, request, handshake_evidence(seen, request.call), seen.page)


def handshake_evidence(seen: Folded, call: CallEvidence) -> HandshakeEvidence | None:
    """The handshake record of a request that got a handshake result (else ``None``)."""
    result = seen.handshake
    if result is None:
        return None
    tools = {"tools": {"listChanged": result.list_changed}} if result.tools else {}
    return HandshakeEvidence(
        requested_version=result.requested,
        negotiated_version=result.negotiated,
        error_code=call.protocol.error_code if call.protocol is not None else None,
        capabilities=tools,
        transport=call.transport,
        authorization=call.authorization,
    )
