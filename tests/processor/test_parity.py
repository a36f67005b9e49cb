"""One scenario table, two evidence paths, the same verdicts.

Every scenario is written once, compactly. It is rendered (a) as an EVIDENCE.md ``session`` record
and classified exactly as ``otel-mcp-health classify`` does, and (b) as the spans the
instrumentation records (handshake, ``tools/list`` pages, ``list_changed``, install, the call),
emitted through a real ``TracerProvider`` into the processor. The exported call span (or the
handshake span, for a failed handshake) must carry the verdict, first failed layer, next action,
reason and catalog verdict of the offline classification.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.support.processor_helpers import DIGEST, OTHER_DIGEST, Pipeline, SessionSpans, verdict_of

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.evidence import Record, SessionEvidence
from otel_mcp_health.core.records import parse_record
from otel_mcp_health.core.report import judge

Page = tuple[str | None, str | None] | str
_T0 = datetime(2026, 11, 30, 10, tzinfo=UTC)
_OK_CALL: dict[str, Any] = {
    "tool": "create_ticket",
    "readOnly": False,
    "transport": {"outcome": "ok", "httpStatus": 200, "requestWritten": True},
    "authorization": {"httpStatus": 200, "error": None, "scope": None},
    "protocol": {"errorCode": None},
    "execution": {"isError": False, "timedOut": False, "outputSchemaValid": None},
    "effect": None,
    "outcome": None,
}


def call(**changes: Any) -> dict[str, Any]:
    """The clean HTTP call record with some sections replaced."""
    return {**_OK_CALL, **changes}


def silent(wire: str = "ok", **changes: Any) -> dict[str, Any]:
    """A call with no answer (timeout or lost connection): no envelope, no execution result."""
    return call(
        transport={"outcome": wire, "httpStatus": None, "requestWritten": True},
        authorization={"httpStatus": None, "error": None, "scope": None},
        protocol=None,
        **changes,
    )


@dataclass(frozen=True)
class Scenario:
    """One row of the scenario table, rendered both as an evidence record and as spans: the call (or
    none), the network, the negotiated version, the discoveries and notifications (offsets from
    the call's end), the client's digest, the contract, and a failed handshake, if any."""

    id: str
    call: dict[str, Any] | None = field(default_factory=call)
    network: str = "tcp"
    negotiated: str | None = "2025-11-25"
    list_changed: bool = True
    #: (start offset, pages); pages 0.2 s apart, the call ends at t = 0.
    discoveries: tuple[tuple[float, tuple[Page, ...]], ...] = (
        (-30.0, ((None, "c1"), ("c1", None))),
    )
    notifications: tuple[float, ...] = ()
    client_digest: str | None = None
    contract: str | None = None
    #: A failed handshake: EVIDENCE.md ``session`` members (errorCode, transport, authorization).
    handshake_failure: dict[str, Any] | None = None


SCENARIOS = (
    Scenario("healthy", call=call(outcome={"method": "file_digest", "passed": True})),
    Scenario("unverified-stdio", network="pipe", call=call(authorization=None)),
    Scenario(
        "needs-auth-invalid-token",
        call=call(
            transport={"outcome": "ok", "httpStatus": 401, "requestWritten": True},
            authorization={"httpStatus": 401, "error": "invalid_token", "scope": None},
            protocol=None,
            execution=None,
        ),
    ),
    Scenario(
        "needs-auth-insufficient-scope",
        call=call(
            transport={"outcome": "ok", "httpStatus": 403, "requestWritten": True},
            authorization={"httpStatus": 403, "error": "insufficient_scope", "scope": "a b"},
            protocol=None,
            execution=None,
        ),
    ),
    Scenario("incompatible-version", negotiated="2024-01-15"),
    Scenario("stale-signal-after-discovery", notifications=(-10.0,)),
    Scenario(
        "converged-after-refresh",
        notifications=(-10.0,),
        discoveries=((-30.0, ((None, None),)), (-5.0, ((None, None),))),
    ),
    Scenario(
        "incomplete-cursor-remaining",
        discoveries=((-30.0, ((None, None),)), (-5.0, ((None, "c1"),))),
    ),
    Scenario("incomplete-page-failed", discoveries=((-30.0, ((None, "c1"), "fail")),)),
    Scenario("incomplete-cursor-gap", discoveries=((-30.0, ((None, "c1"), ("zz", None))),)),
    Scenario(
        "incomplete-cursor-loop", discoveries=((-30.0, ((None, "c1"), ("c1", "c1"), ("c1", None))),)
    ),
    Scenario("silent-server-fresh", list_changed=False),
    Scenario("silent-server-overdue", list_changed=False, discoveries=((-400.0, ((None, None),)),)),
    Scenario("no-discovery", discoveries=()),
    Scenario("digest-mismatch", client_digest=OTHER_DIGEST),
    Scenario("registered-client-matches", client_digest=DIGEST),
    Scenario("unknown-tool-called", contract="unknown_tool_called"),
    Scenario("missing-required-argument", contract="missing_required_argument"),
    Scenario("protocol-error", call=call(protocol={"errorCode": -32602}, execution=None)),
    Scenario("method-not-found", call=call(protocol={"errorCode": -32601}, execution=None)),
    Scenario(
        "incompatible-code-on-call", call=call(protocol={"errorCode": -32022}, execution=None)
    ),
    Scenario(
        "tool-failed",
        call=call(execution={"isError": True, "timedOut": False, "outputSchemaValid": None}),
    ),
    Scenario(
        "output-schema-violation",
        call=call(execution={"isError": False, "timedOut": False, "outputSchemaValid": False}),
    ),
    Scenario(
        "effect-unknown-timeout",
        call=silent(execution={"isError": None, "timedOut": True, "outputSchemaValid": None}),
    ),
    Scenario(
        "timeout-read-only",
        call=silent(
            readOnly=True, execution={"isError": None, "timedOut": True, "outputSchemaValid": None}
        ),
    ),
    Scenario("effect-unknown-connection-lost", call=silent("connection_lost", execution=None)),
    Scenario(
        "connection-lost-read-only", call=silent("connection_lost", readOnly=True, execution=None)
    ),
    Scenario(
        "reconciled-absent",
        call=silent(
            execution={"isError": None, "timedOut": True, "outputSchemaValid": None},
            effect={"observed": False, "method": "destination_query"},
        ),
    ),
    Scenario(
        "reconciled-present-verified",
        call=silent(
            execution={"isError": None, "timedOut": True, "outputSchemaValid": None},
            effect={"observed": True, "method": "idempotency_key"},
            outcome={"method": "destination_query", "passed": True},
        ),
    ),
    Scenario(
        "http-503",
        call=call(
            transport={"outcome": "http_error", "httpStatus": 503, "requestWritten": True},
            authorization={"httpStatus": 503, "error": None, "scope": None},
            protocol=None,
            execution=None,
        ),
    ),
    Scenario(
        "dns-failure",
        call=call(
            transport={"outcome": "dns_failure", "httpStatus": None, "requestWritten": False},
            authorization={"httpStatus": None, "error": None, "scope": None},
            protocol=None,
            execution=None,
        ),
    ),
    Scenario("false-success", call=call(outcome={"method": "file_digest", "passed": False})),
    Scenario("outcome-not-required", call=call(outcome={"method": "not_required", "passed": True})),
    Scenario(
        "handshake-needs-auth",
        call=None,
        handshake_failure={
            "transport": {"outcome": "ok", "httpStatus": 401, "requestWritten": True},
            "authorization": {"httpStatus": 401, "error": "invalid_token", "scope": None},
        },
    ),
    Scenario(
        "handshake-incompatible-code",
        call=None,
        handshake_failure={
            "errorCode": -32022,
            "transport": {"outcome": "ok", "httpStatus": 200, "requestWritten": True},
            "authorization": {"httpStatus": 200, "error": None, "scope": None},
        },
    ),
    Scenario(
        "handshake-transport-error",
        call=None,
        handshake_failure={
            "transport": {
                "outcome": "connection_refused",
                "httpStatus": None,
                "requestWritten": False,
            },
        },
    ),
)


# ----------------------------------------------------------------------------------------------
# Rendering (a): an EVIDENCE.md record
# ----------------------------------------------------------------------------------------------
def _iso(offset: float) -> str:
    return (_T0 + timedelta(seconds=offset)).isoformat().replace("+00:00", "Z")


def _pages(start: float, pages: tuple[Page, ...]) -> tuple[list[dict[str, Any]], float | None]:
    out: list[dict[str, Any]] = []
    for page in pages:
        if page == "fail":
            out.append({"cursor": None, "error": {"code": -32602}})
        else:
            cursor, next_cursor = page
            out.append({"cursor": cursor, "nextCursor": next_cursor})
    last = pages[-1]
    complete = last != "fail" and last[1] is None
    return out, (start + 0.2 * (len(pages) - 1) + 0.1) if complete else None


def as_record(s: Scenario) -> Record:
    session: dict[str, Any] = {"requestedVersion": "2025-11-25", "errorCode": None}
    if s.handshake_failure is not None:
        session.update({"negotiatedVersion": None, "capabilities": None, **s.handshake_failure})
        data: dict[str, Any] = {"kind": "session", "id": s.id, "session": session}
        record = parse_record(data)
        assert isinstance(record, Record), record
        return record
    session["negotiatedVersion"] = s.negotiated
    session["capabilities"] = {"tools": {"listChanged": s.list_changed}}
    discoveries = []
    for start, pages in s.discoveries:
        rendered, completed = _pages(start, pages)
        discovery: dict[str, Any] = {
            "startedAt": _iso(start),
            "completedAt": _iso(completed) if completed is not None else None,
            "pages": rendered,
        }
        if completed is not None:
            discovery["digest"] = DIGEST
        discoveries.append(discovery)
    catalog: dict[str, Any] = {
        "listChanged": s.list_changed,
        "refreshPolicy": {"maxAgeSeconds": 300},
        "now": _iso(0),
        "notifications": [_iso(n) for n in s.notifications],
        "discoveries": discoveries,
        "clientDigest": s.client_digest,
    }
    assert s.call is not None
    if s.contract is not None:
        catalog["toolCalls"] = [{"name": s.call["tool"], "contract": s.contract}]
    data = {"kind": "session", "id": s.id, "session": session, "catalog": catalog, "call": s.call}
    record = parse_record(data)
    assert isinstance(record, Record), record
    return record


# ----------------------------------------------------------------------------------------------
# Rendering (b): the spans the instrumentation records
# ----------------------------------------------------------------------------------------------
def emit(s: Scenario, pipeline: Pipeline) -> None:
    """The same record, written by the instrumentation's own encoder (``_codec``)."""
    evidence = as_record(s).evidence
    assert isinstance(evidence, SessionEvidence)
    spans = SessionSpans(pipeline.tracer, key=s.id, network=s.network)
    if s.handshake_failure is not None:
        assert evidence.handshake is not None
        attrs = _codec.encode_handshake(evidence.handshake)
        spans.emit(
            "initialize",
            {A.MCP_METHOD_NAME: "initialize", A.SESSION_ERA: "initialize", **attrs},
            -1,
        )
        return
    spans.handshake(negotiated=s.negotiated, list_changed=s.list_changed)
    for start, pages in s.discoveries:
        spans.traversal(pages, start=start)
    for signal in s.notifications:
        spans.signal(signal)
    if s.client_digest is not None:
        spans.install(-0.5, s.client_digest)
    assert evidence.call is not None
    assert evidence.catalog is not None
    attrs = _codec.encode_call(evidence.call)
    for check in evidence.catalog.tool_calls:
        attrs.update(_codec.encode_tool_call_check(check))
    spans.call(s.call["tool"] if s.call else "", ok=False, **attrs)


# ----------------------------------------------------------------------------------------------
# The test
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_processor_and_offline_classify_agree(scenario: Scenario, pipeline: Pipeline) -> None:
    offline, _ = judge(as_record(scenario))
    emit(scenario, pipeline)
    judged = pipeline.last("initialize" if scenario.handshake_failure else "tools/call")
    online = verdict_of(judged)
    fields = ["verdict", "firstFailedLayer", "nextAction", "reason"]
    if scenario.handshake_failure is None:
        fields.append("catalogVerdict")
    assert {k: online[k] for k in fields} == {k: offline[k] for k in fields}


def test_the_table_covers_every_catalog_verdict_and_the_reachable_session_verdicts() -> None:
    rows = [judge(as_record(s))[0] for s in SCENARIOS]
    assert {r["catalogVerdict"] for r in rows if "catalogVerdict" in r} >= {
        "converged",
        "stale",
        "incomplete",
        "unverifiable",
    }
    # ``working`` is a live state (the in-flight gauge), never on a finished span.
    assert {r["verdict"] for r in rows} == {
        "needs_auth",
        "incompatible_session",
        "stale_catalog",
        "transport_error",
        "protocol_error",
        "tool_failed",
        "effect_unknown",
        "false_success",
        "healthy",
        "unverified",
    }
