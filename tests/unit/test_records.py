"""The EVIDENCE.md parser: exact shapes accepted, bad input reported precisely, never a crash."""

from __future__ import annotations

import json

import pytest

from otel_mcp_health.core.evidence import (
    NOT_APPLICABLE,
    CallEvidence,
    CatalogEvidence,
    SessionEvidence,
)
from otel_mcp_health.core.records import EvidenceError, parse_line, parse_lines, parse_record
from otel_mcp_health.core.vocabulary import AuthError, CatalogVerdict, TransportOutcome

from ._records import load_raw, record

CANARY = "CANARY-7f3a-do-not-echo"


def test_evidence_md_examples_parse() -> None:
    catalog = record(
        {
            "kind": "catalog",
            "id": "baseline",
            "listChanged": True,
            "refreshPolicy": None,
            "now": "2026-11-30T10:00:00Z",
            "notifications": ["2026-11-30T09:58:00Z"],
            "discoveries": [
                {
                    "startedAt": "2026-11-30T09:58:01Z",
                    "completedAt": "2026-11-30T09:58:02Z",
                    "pages": [
                        {
                            "cursor": None,
                            "nextCursor": "p2",
                            "tools": [{"name": "a", "inputSchema": {"type": "object"}}],
                        },
                        {
                            "cursor": "p2",
                            "nextCursor": None,
                            "tools": [{"name": "b", "inputSchema": {"type": "object"}}],
                        },
                    ],
                }
            ],
            "clientTools": None,
            "toolCalls": [{"name": "a", "argumentNames": ["x"]}],
        }
    )
    assert isinstance(catalog.evidence, CatalogEvidence)
    assert catalog.evidence.discoveries[0].pages[1].cursor == "p2"
    assert catalog.evidence.now == 1_796_032_800 * 10**9

    call = record(
        {
            "kind": "call",
            "id": "publish-timeout",
            "tool": "publish_report",
            "readOnly": False,
            "transport": {"outcome": "ok", "httpStatus": 200, "requestWritten": True},
            "authorization": {"httpStatus": 200},
            "protocol": {"errorCode": None},
            "execution": {"isError": False, "timedOut": False, "outputSchemaValid": None},
            "effect": None,
            "outcome": {"method": "file_digest", "passed": False},
        }
    )
    assert isinstance(call.evidence, CallEvidence)
    assert call.evidence.transport is not None
    assert call.evidence.transport.outcome is TransportOutcome.OK

    session = record(
        {
            "kind": "session",
            "id": "long-call",
            "session": {
                "requestedVersion": "2025-11-25",
                "negotiatedVersion": "2025-11-25",
                "errorCode": None,
                "capabilities": {"tools": {"listChanged": True}},
            },
            "catalog": {"verdict": "converged"},
            "call": {"transport": {"outcome": "ok"}},
            "progress": {
                "now": "2026-11-30T10:00:30Z",
                "startedAt": "2026-11-30T10:00:00Z",
                "inFlight": True,
                "idleWindowSeconds": 20,
                "deadlineSeconds": 300,
                "requestToken": "7",
                "events": [{"at": "2026-11-30T10:00:10Z", "token": "7", "progress": 1, "total": 3}],
            },
        }
    )
    assert isinstance(session.evidence, SessionEvidence)
    assert session.evidence.catalog_verdict is CatalogVerdict.CONVERGED


def test_authorization_absent_null_and_object_differ() -> None:
    absent = record({"kind": "call", "id": "x"}).evidence
    null = record({"kind": "call", "id": "x", "authorization": None}).evidence
    given = record(
        {
            "kind": "call",
            "id": "x",
            "authorization": {"httpStatus": 403, "error": "insufficient_scope", "scope": "a b"},
        }
    ).evidence
    assert isinstance(absent, CallEvidence)
    assert isinstance(null, CallEvidence)
    assert isinstance(given, CallEvidence)
    assert absent.authorization is None
    assert null.authorization is NOT_APPLICABLE
    assert given.authorization is not None
    assert given.authorization is not NOT_APPLICABLE
    assert given.authorization.error is AuthError.INSUFFICIENT_SCOPE
    assert given.authorization.scope == ("a", "b")


@pytest.mark.parametrize(
    ("line", "field", "expected"),
    [
        ("{not json", "", "one JSON object per line"),
        ("[1, 2]", "", "an object, got an array"),
        ('{"id": "x"}', "kind", "a string (required)"),
        ('{"kind": "nope", "id": "x"}', "kind", 'one of "catalog", "call", "session"'),
        ('{"kind": "call"}', "id", "a string (required)"),
        (
            '{"kind": "call", "id": "x", "transport": {"outcome": "teleport"}}',
            "transport.outcome",
            "one of ok, dns_failure",
        ),
        ('{"kind": "call", "id": "x", "transport": {}}', "transport.outcome", "(required)"),
        (
            '{"kind": "call", "id": "x", "transport": {"outcome": "ok", "httpStatus": "200"}}',
            "transport.httpStatus",
            "an integer or null, got a string",
        ),
        (
            '{"kind": "call", "id": "x", "execution": {"isError": "no"}}',
            "execution.isError",
            "true, false or null",
        ),
        (
            '{"kind": "call", "id": "x", "effect": {"method": "destination_query"}}',
            "effect.observed",
            "true or false (required)",
        ),
        (
            '{"kind": "call", "id": "x", "outcome": {"passed": true}}',
            "outcome.method",
            "a string (required)",
        ),
        ('{"kind": "catalog", "id": "x", "now": "yesterday"}', "now", "an RFC 3339 time"),
        (
            '{"kind": "catalog", "id": "x", "now": "2026-11-30T10:00:00"}',
            "now",
            "with a UTC offset",
        ),
        (
            '{"kind": "catalog", "id": "x", "discoveries": [{"pages": [{"tools": [{}]}]}]}',
            "discoveries[0].pages[0].tools[0].name",
            "a string (required)",
        ),
        (
            '{"kind": "catalog", "id": "x", "refreshPolicy": {"maxAgeSeconds": -5}}',
            "refreshPolicy.maxAgeSeconds",
            "non-negative",
        ),
        (
            '{"kind": "catalog", "id": "x", "notifications": [12]}',
            "notifications[0]",
            "an RFC 3339 time string, got a number",
        ),
        (
            '{"kind": "session", "id": "x", "catalog": {"verdict": "green"}}',
            "catalog.verdict",
            "one of converged",
        ),
        (
            (
                '{"kind": "session", "id": "x", "progress": {"events": [{"at": '
                '"2026-11-30T10:00:00Z"}]}}'
            ),
            "progress.events[0].progress",
            "a number (required)",
        ),
        (
            '{"kind": "call", "id": "x", "authorization": {"error": "bad_gateway"}}',
            "authorization.error",
            "one of invalid_token",
        ),
    ],
)
def test_bad_lines_are_precise_errors(line: str, field: str, expected: str) -> None:
    parsed = parse_line(line, 7)
    assert isinstance(parsed, EvidenceError)
    assert parsed.line == 7
    assert parsed.field == field
    assert expected in parsed.expected
    assert str(parsed).startswith("line 7: ")


def test_error_messages_never_echo_values() -> None:
    line = json.dumps({"kind": "call", "id": "x", "transport": {"outcome": CANARY}})
    parsed = parse_line(line, 1)
    assert isinstance(parsed, EvidenceError)
    assert CANARY not in str(parsed)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    line = '{"kind": "catalog", "id": "x", "clientTools": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert isinstance(parse_line(line, 1), EvidenceError)


def test_blank_lines_are_skipped_and_bad_lines_do_not_stop_the_rest() -> None:
    lines = ['{"kind": "call", "id": "a"}', "", "   ", "garbage", '{"kind": "call", "id": "b"}']
    parsed = list(parse_lines(lines))
    assert [type(p).__name__ for p in parsed] == ["Record", "EvidenceError", "Record"]
    assert isinstance(parsed[1], EvidenceError)
    assert parsed[1].line == 4


def test_every_seed_line_parses() -> None:
    for name in ("seed000_catalog.jsonl", "seed002_sessions.jsonl", "seed003_calls.jsonl"):
        for raw in load_raw(name):
            assert not isinstance(parse_record(raw), EvidenceError)
