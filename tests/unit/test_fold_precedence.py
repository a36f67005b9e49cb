"""The fold's precedence table, cell by cell, through the public fold (core.precedence).

Every cell of :data:`PRECEDENCE` has scenarios here: the facts that came before (``prior``), the
fact whose reading applies the cell's row (``trigger``) and the value the field ends with. A cell
whose field an earlier fact can write with another value has a scenario where it did, so the
scenario tells ``SET`` (the latest wins) from ``KEEP`` (the earlier stays); an ``OVER_OK`` cell has
one where the earlier value is ``ok`` (replaced) and one where it is a failure (kept); every cell
has one where nothing was recorded yet (``KEEP`` and ``OVER_OK`` write, ``NEXT`` does not). The
last test replaces each cell's rule by each other rule in turn and requires a scenario of the
cell to end otherwise, so a swap of two rules anywhere in the table fails here, save between
rules that no reachable state tells apart (:data:`ALIKE`, each with why).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from otel_mcp_health.core import facts as F
from otel_mcp_health.core import fold as fold_module
from otel_mcp_health.core.evidence import OutcomeEvidence, Page
from otel_mcp_health.core.fold import PRECEDENCE, TIMEOUT, TOOL_ERROR, fold
from otel_mcp_health.core.observations import Observed
from otel_mcp_health.core.precedence import EXCEPTION_TYPE, FIRST_CLASSIFICATION, Overwrite
from otel_mcp_health.core.vocabulary import AuthError

_EXC = EXCEPTION_TYPE


class Case(NamedTuple):
    """``prior`` then ``trigger`` (which applies ``row``); ``field`` ends as ``expected``."""

    row: str
    field: str
    prior: tuple[F.Fact, ...]
    trigger: F.Fact
    expected: object
    network: str = "tcp"


OK = F.HttpResponse(200)  # transport_outcome ok, written True, http_status 200
FAILED = F.HttpResponse(500)  # transport_outcome http_error, written True, http_status 500
# http_error on a JSON body: the SDK's error is read as JSON-RPC, not collapsed
FAILED_JSON = F.HttpResponse(500, json_body=True)
REFUSED = F.HttpFailure("ConnectError", outcome="connection_refused", written=False)
UNSENT = F.HttpFailure("ConnectError", written=False)  # written False, nothing classified
CLOSED = F.Raised(F.Failure.CLOSED, "ClosedResourceError")
RPC = F.Raised(F.Failure.RPC, "McpError", code=-32601)
CANCELLED = F.Raised(F.Failure.CANCELLED, "CancelledError")
REJECTED = F.HttpFailure("HTTPStatusError", status=404)
OAUTH = F.HttpFailure("OAuthFlowError", oauth=True)
LOST = F.HttpFailure("ReadError", outcome="connection_lost")
PAGE_1 = F.PageResult(Page(cursor="a"), 1)
PAGE_2 = F.PageResult(Page(cursor="b"), 1)
RECEIPT_1 = F.Outcome(OutcomeEvidence(method="m", passed=True))
RECEIPT_2 = F.Outcome(OutcomeEvidence(method="m", passed=False))

CASES: tuple[Case, ...] = (
    # http_response: every column an observation of the response itself
    Case("http_response", "http_status", (OK,), F.HttpResponse(404), 404),
    Case("http_response", "http_status", (), F.HttpResponse(404), 404),
    Case("http_response", "http_json_body", (F.HttpResponse(200, json_body=True),), OK, False),
    Case("http_response", "http_json_body", (), F.HttpResponse(200, json_body=True), True),
    Case("http_response", "transport_outcome", (REFUSED,), OK, "ok"),
    Case("http_response", "transport_outcome", (OK,), FAILED, "http_error"),
    Case("http_response", "written", (UNSENT,), OK, True),
    Case("http_response", "written", (), OK, True),
    Case(
        "http_response",
        "auth_error",
        (F.HttpResponse(401, auth_error=AuthError.INVALID_TOKEN),),
        OK,
        None,
    ),
    Case(
        "http_response",
        "auth_error",
        (),
        F.HttpResponse(401, auth_error=AuthError.INVALID_TOKEN),
        AuthError.INVALID_TOKEN,
    ),
    Case("http_response", "auth_scope", (F.HttpResponse(403, scope=("a",)),), OK, ()),
    Case("http_response", "auth_scope", (), F.HttpResponse(403, scope=("a",)), ("a",)),
    Case(
        "http_response",
        "session_id",
        (F.HttpResponse(200, session_id="s1"),),
        F.HttpResponse(200, session_id="s2"),
        "s2",
    ),
    Case("http_response", "session_id", (), F.HttpResponse(200, session_id="s2"), "s2"),
    # http_rejected: an error status the HTTP client raised for; a transport failure only over ok
    Case("http_rejected", "answered", (), REJECTED, True),
    Case("http_rejected", "error_type", (REFUSED,), REJECTED, "404"),
    Case("http_rejected", "transport_outcome", (OK,), REJECTED, "http_error"),
    Case("http_rejected", "transport_outcome", (REFUSED,), REJECTED, "connection_refused"),
    Case("http_rejected", "transport_outcome", (), REJECTED, "http_error"),
    Case("http_rejected", _EXC, (UNSENT,), REJECTED, "HTTPStatusError"),
    # oauth_failed: the OAuth flow failed, an observation of every column it names
    Case(
        "oauth_failed",
        "auth_error",
        (F.HttpResponse(401, auth_error=AuthError.INVALID_TOKEN),),
        OAUTH,
        AuthError.OAUTH_ERROR,
    ),
    Case("oauth_failed", "error_type", (REFUSED,), OAUTH, "oauth_error"),
    Case("oauth_failed", "transport_outcome", (REFUSED,), OAUTH, "ok"),
    Case("oauth_failed", "written", (UNSENT,), OAUTH, True),
    Case("oauth_failed", "written", (), OAUTH, True),
    Case("oauth_failed", _EXC, (UNSENT,), OAUTH, "OAuthFlowError"),
    # transport_failed: the transport outcome is observed (the latest wins, ok or failure); the
    # error type it implies never replaces one already classified
    Case("transport_failed", "transport_outcome", (OK,), REFUSED, "connection_refused"),
    Case("transport_failed", "transport_outcome", (REFUSED,), LOST, "connection_lost"),
    Case("transport_failed", "transport_outcome", (), LOST, "connection_lost"),
    Case("transport_failed", "error_type", (REFUSED,), LOST, "connection_refused"),
    Case("transport_failed", "error_type", (F.Result(is_error=True),), LOST, TOOL_ERROR),
    Case("transport_failed", "error_type", (OK,), LOST, "connection_lost"),
    Case("transport_failed", "written", (OK,), UNSENT, False),
    Case("transport_failed", _EXC, (UNSENT,), LOST, "ReadError"),
    # sdk_entered: the block began; the write is not yet seen, unless it already was
    Case("sdk_entered", "sdk_entered", (), F.SdkEntered(), True),
    Case("sdk_entered", "write_started", (F.SdkEntered(), F.WriteStarted()), F.SdkEntered(), True),
    Case("sdk_entered", "write_started", (), F.SdkEntered(), False),
    # write_started: the second step, visible only once the block began
    Case("write_started", "write_started", (F.SdkEntered(),), F.WriteStarted(), True),
    Case("write_started", "write_started", (), F.WriteStarted(), None),
    # sdk_exit: a normal exit infers the write; sdk_exit_closed observes it failed
    Case("sdk_exit", "written", (UNSENT,), F.SdkExit(), False),
    Case("sdk_exit", "written", (), F.SdkExit(), True),
    Case("sdk_exit_closed", "written", (OK,), F.SdkExit(F.Failure.CLOSED), False),
    # result: the answer is observed; the write and the transport are only inferred from it
    Case("result", "answered", (), F.Result(), True),
    Case("result", "written", (UNSENT,), F.Result(), False),
    Case("result", "written", (), F.Result(), True),
    Case("result", "transport_outcome", (FAILED,), F.Result(), "http_error"),
    Case("result", "transport_outcome", (), F.Result(), "ok"),
    Case("result", "is_error", (F.Result(is_error=True),), F.Result(is_error=False), False),
    Case("result", "is_error", (), F.Result(is_error=True), True),
    Case("result", "error_type", (REFUSED,), F.Result(is_error=True), TOOL_ERROR),
    # the checks and results each observe their own column
    Case(
        "output_schema", "output_schema_valid", (F.OutputSchema(False),), F.OutputSchema(True), True
    ),
    Case("output_schema", "output_schema_valid", (), F.OutputSchema(False), False),
    Case("outcome", "outcome", (RECEIPT_1,), RECEIPT_2, RECEIPT_2.outcome),
    Case("outcome", "outcome", (), RECEIPT_1, RECEIPT_1.outcome),
    Case(
        "handshake",
        "handshake",
        (F.HandshakeResult(requested="a"),),
        F.HandshakeResult(requested="b"),
        F.HandshakeResult(requested="b"),
    ),
    Case("handshake", "handshake", (), F.HandshakeResult(), F.HandshakeResult()),
    Case("page", "page", (PAGE_1,), PAGE_2, PAGE_2),
    Case("page", "page", (), PAGE_1, PAGE_1),
    # timeout: delivered, the answer only late; the write and the transport are inferred
    Case("timeout", _EXC, (UNSENT,), F.Raised(F.Failure.TIMEOUT, "TimeoutError"), "TimeoutError"),
    Case("timeout", "timed_out", (), F.Raised(F.Failure.TIMEOUT, "TimeoutError"), True),
    Case("timeout", "written", (UNSENT,), F.Raised(F.Failure.TIMEOUT, "TimeoutError"), False),
    Case("timeout", "written", (), F.Raised(F.Failure.TIMEOUT, "TimeoutError"), True),
    Case("timeout", "transport_outcome", (FAILED,), F.Raised(F.Failure.TIMEOUT, "T"), "http_error"),
    Case("timeout", "transport_outcome", (), F.Raised(F.Failure.TIMEOUT, "T"), "ok"),
    Case("timeout", "error_type", (), F.Raised(F.Failure.TIMEOUT, "TimeoutError"), TIMEOUT),
    # closed: the stream closed; a transport failure over ok (an HTTP answer already recorded),
    # never over another failure; "not written" only where nothing recorded the write
    Case("closed", _EXC, (UNSENT,), CLOSED, "ClosedResourceError"),
    Case("closed", "written", (F.SdkExit(),), CLOSED, True),
    Case("closed", "written", (), CLOSED, False),
    Case("closed", "transport_outcome", (OK,), CLOSED, "connection_lost"),
    Case("closed", "transport_outcome", (F.Result(),), CLOSED, "connection_lost"),
    Case("closed", "transport_outcome", (FAILED,), CLOSED, "http_error"),
    Case("closed", "transport_outcome", (), CLOSED, "process_exit", "pipe"),
    Case("closed", "error_type", (FAILED,), CLOSED, "http_error"),
    Case("closed", "error_type", (), CLOSED, "connection_lost"),
    # http_collapsed: the SDK made a JSON-RPC code up from an HTTP error status
    Case("http_collapsed", _EXC, (UNSENT, F.HttpResponse(404)), RPC, "McpError"),
    Case("http_collapsed", "answered", (F.HttpResponse(404),), RPC, True),
    Case("http_collapsed", "error_type", (F.HttpResponse(404),), RPC, "404"),
    Case("http_collapsed", "transport_outcome", (F.HttpResponse(404),), RPC, "http_error"),
    # rpc_error: the server's JSON-RPC error; the write and the transport are inferred
    Case("rpc_error", _EXC, (UNSENT,), RPC, "McpError"),
    Case("rpc_error", "answered", (), RPC, True),
    Case("rpc_error", "transport_outcome", (FAILED_JSON,), RPC, "http_error"),
    Case("rpc_error", "transport_outcome", (), RPC, "ok"),
    Case("rpc_error", "written", (UNSENT,), RPC, False),
    Case("rpc_error", "written", (), RPC, True),
    Case("rpc_error", "error_code", (), RPC, -32601),
    Case("rpc_error", "error_type", (), RPC, "-32601"),
    # cancelled: the host stopped waiting; before the write there was no call (observed), after
    # it silence; the transport is only inferred
    Case("cancelled", _EXC, (UNSENT,), CANCELLED, "CancelledError"),
    Case("cancelled", "cancelled", (), CANCELLED, True),
    Case("cancelled", "written", (F.SdkEntered(), F.SdkExit()), CANCELLED, False),
    Case("cancelled", "timed_out", (), CANCELLED, True),
    Case("cancelled", "transport_outcome", (FAILED,), CANCELLED, "http_error"),
    Case("cancelled", "transport_outcome", (F.SdkExit(),), CANCELLED, "ok"),
    Case("cancelled", "error_type", (), CANCELLED, "CancelledError"),
    # invalid_result and raised: the exception observed
    Case("invalid_result", _EXC, (UNSENT,), F.Raised(F.Failure.INVALID, "VE"), "VE"),
    Case("invalid_result", "result_valid", (), F.Raised(F.Failure.INVALID, "VE"), False),
    Case("invalid_result", "error_type", (), F.Raised(F.Failure.INVALID, "VE"), "VE"),
    Case("raised", _EXC, (UNSENT,), F.Raised(F.Failure.OTHER, "Boom"), "Boom"),
    Case("raised", "error_type", (FAILED,), F.Raised(F.Failure.OTHER, "Boom"), "http_error"),
    Case("raised", "error_type", (), F.Raised(F.Failure.OTHER, "Boom"), "Boom"),
)

#: Cells where no reachable state tells the listed rules from the table's, and why: a scenario
#: cannot pin what does not show.
ALIKE: dict[tuple[str, str], tuple[frozenset[Overwrite], str]] = {}
_ONLY_TRUE = "starts False and is only ever set True: NEXT writes over False where SET writes"
_FLAG = "a flag is never ok: OVER_OK keeps it where KEEP does"
_OK_ONLY = "the reading proposes only ok: OVER_OK writes it where KEEP does"
_UNCLASSIFIED = "the row applies only while nothing is classified: nothing to keep"
for _row, _field in [
    ("http_rejected", "answered"),
    ("sdk_entered", "sdk_entered"),
    ("result", "answered"),
    ("timeout", "timed_out"),
    ("http_collapsed", "answered"),
    ("rpc_error", "answered"),
    ("cancelled", "cancelled"),
    ("cancelled", "timed_out"),
]:
    ALIKE[_row, _field] = (frozenset({Overwrite.NEXT}), _ONLY_TRUE)
for _row, _field in [
    ("sdk_entered", "write_started"),
    ("sdk_exit", "written"),
    ("result", "written"),
    ("timeout", "written"),
    ("closed", "written"),
    ("rpc_error", "written"),
]:
    ALIKE[_row, _field] = (frozenset({Overwrite.OVER_OK}), _FLAG)
for _row in ("result", "timeout", "rpc_error", "cancelled"):
    ALIKE[_row, "transport_outcome"] = (frozenset({Overwrite.OVER_OK}), _OK_ONLY)
for _row in (
    "timeout",
    "closed",
    "http_collapsed",
    "rpc_error",
    "cancelled",
    "invalid_result",
    "raised",
):
    ALIKE[_row, "error_type"] = (frozenset({Overwrite.KEEP, Overwrite.OVER_OK}), _UNCLASSIFIED)
ALIKE["transport_failed", "error_type"] = (
    frozenset({Overwrite.OVER_OK}),
    "no error type is ok: OVER_OK keeps one where KEEP does",
)
ALIKE["rpc_error", "error_code"] = (
    frozenset({Overwrite.KEEP, Overwrite.OVER_OK}),
    "only this row writes it, and it classifies: nothing recorded before it to keep",
)
ALIKE["invalid_result", "result_valid"] = (
    frozenset({Overwrite.KEEP, Overwrite.OVER_OK}),
    "only this row writes it, and it classifies: nothing recorded before it to keep",
)
ALIKE["http_collapsed", "transport_outcome"] = (
    frozenset({Overwrite.SET}),
    (
        "the only transport failure recorded before it with nothing classified is an HTTP"
        " response's http_error, the value it proposes"
    ),
)


def _seed() -> Observed:
    return Observed(method="tools/call", tool_name="t")


@pytest.fixture
def applied(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """The rows the fold applies, with the values their readings propose, in order."""
    calls: list[tuple[str, dict[str, Any]]] = []
    real = fold_module._apply

    def spy(seen: fold_module.Folded, row: str, values: dict[str, Any]) -> None:
        calls.append((row, dict(values)))
        real(seen, row, values)

    monkeypatch.setattr(fold_module, "_apply", spy)
    return calls


@pytest.mark.parametrize("case", CASES, ids=[f"{c.row}.{c.field}-{i}" for i, c in enumerate(CASES)])
def test_a_cell_decides_whose_value_wins(
    case: Case, applied: list[tuple[str, dict[str, Any]]]
) -> None:
    before = fold(_seed(), case.prior, network=case.network)
    applied.clear()
    seen = fold(_seed(), [*case.prior, case.trigger], network=case.network)
    row, values = applied[-1]
    assert (row, case.field in values) == (case.row, True), "the trigger applies the cell's row"
    if row in FIRST_CLASSIFICATION:
        assert before.error_type is None, "the row applies only while nothing is classified"
    assert getattr(seen, case.field) == case.expected


def test_every_cell_has_a_scenario() -> None:
    cells = {(row, field) for row, cells in PRECEDENCE.items() for field in cells}
    assert cells - {(c.row, c.field) for c in CASES} == set()


def _ends_as_expected(case: Case) -> bool:
    seen = fold(_seed(), [*case.prior, case.trigger], network=case.network)
    return bool(getattr(seen, case.field) == case.expected)


def test_any_other_rule_in_any_cell_fails_a_scenario(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each cell's rule replaced by each other rule, one at a time: some scenario of the cell
    ends otherwise, unless :data:`ALIKE` says why none can (and then none does)."""
    missed, stale = [], []
    for row, cells in PRECEDENCE.items():
        for field, rule in cells.items():
            scenarios = [c for c in CASES if (c.row, c.field) == (row, field)]
            alike = ALIKE.get((row, field), (frozenset(), ""))[0]
            for other in set(Overwrite) - {rule}:
                table = {r: dict(c) for r, c in PRECEDENCE.items()}
                table[row][field] = other
                monkeypatch.setattr(fold_module, "PRECEDENCE", table)
                pinned = not all(_ends_as_expected(c) for c in scenarios)
                if not pinned and other not in alike:
                    missed.append((row, field, other.name))
                if pinned and other in alike:
                    stale.append((row, field, other.name))
    assert (missed, stale) == ([], [])
