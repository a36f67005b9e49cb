"""The seed fixtures reproduce every verdict the seeds name, the two rates, and the moves.

SPEC §5: "changing one piece of evidence must move the state predictably".
"""

from __future__ import annotations

from typing import Any

import pytest

from otel_mcp_health.core.calls import rates
from otel_mcp_health.core.report import expectation_mismatches, judge

from ._records import load_raw, raw_by_id, record

FILES = ("seed000_catalog.jsonl", "seed002_sessions.jsonl", "seed003_calls.jsonl")
CASES = [(name, raw) for name in FILES for raw in load_raw(name)]


def test_case_counts() -> None:
    assert [len(load_raw(name)) for name in FILES] == [6, 9, 8]


@pytest.mark.parametrize(("name", "raw"), CASES, ids=[f"{n[:7]}-{r['id']}" for n, r in CASES])
def test_each_seed_case_gets_its_expected_verdict(name: str, raw: dict[str, Any]) -> None:
    parsed = record(raw)
    assert parsed.expect, "every seed case states its expected verdict"
    row, _ = judge(parsed)
    assert expectation_mismatches(parsed, row) == []


def test_seed002_covers_nine_distinct_states() -> None:
    verdicts = {judge(record(raw))[0]["verdict"] for raw in load_raw("seed002_sessions.jsonl")}
    assert verdicts == {
        "healthy",
        "needs_auth",
        "incompatible_session",
        "stale_catalog",
        "working",
        "protocol_error",
        "tool_failed",
        "effect_unknown",
        "false_success",
    }


def test_seed003_rates() -> None:
    results = [judge(record(raw))[1] for raw in load_raw("seed003_calls.jsonl")]
    summary = rates(r for r in results if r is not None)
    assert (summary.calls, summary.envelopes, summary.verified) == (8, 3, 1)
    assert summary.protocol_success == pytest.approx(0.375)
    assert summary.verified_outcomes == pytest.approx(0.125)


def _verdict(raw: dict[str, Any]) -> str:
    verdict: str = judge(record(raw))[0]["verdict"]
    return verdict


def test_move_full_refresh_after_list_change_advances_stale_case() -> None:
    raw = raw_by_id("seed002_sessions.jsonl", "unreconciled-list-change")
    assert _verdict(raw) == "stale_catalog"
    raw["catalog"]["discoveries"].append(
        {
            "startedAt": "2026-11-30T10:00:06Z",
            "completedAt": "2026-11-30T10:00:07Z",
            "pages": raw["catalog"]["discoveries"][0]["pages"],
        }
    )
    assert _verdict(raw) == "healthy"


def test_move_refresh_that_began_before_the_signal_does_not_count() -> None:
    raw = raw_by_id("seed002_sessions.jsonl", "unreconciled-list-change")
    raw["catalog"]["discoveries"].append(
        {
            "startedAt": "2026-11-30T10:00:04Z",  # before the 10:00:05 signal
            "completedAt": "2026-11-30T10:00:09Z",  # ... even though it ends after it
            "pages": raw["catalog"]["discoveries"][0]["pages"],
        }
    )
    assert _verdict(raw) == "stale_catalog"


def test_move_destination_receipt_with_failing_verifier_gives_false_success() -> None:
    raw = raw_by_id("seed002_sessions.jsonl", "timeout-after-possible-side-effect")
    assert _verdict(raw) == "effect_unknown"
    raw["call"]["effect"] = {"observed": True, "method": "destination_query"}
    raw["call"]["outcome"] = {"method": "file_digest", "passed": False}
    assert _verdict(raw) == "false_success"


def test_move_destination_receipt_with_passing_verifier_gives_healthy() -> None:
    raw = raw_by_id("seed002_sessions.jsonl", "timeout-after-possible-side-effect")
    raw["call"]["effect"] = {"observed": True, "method": "idempotency_key"}
    raw["call"]["outcome"] = {"method": "file_digest", "passed": True}
    assert _verdict(raw) == "healthy"
    raw["call"]["outcome"] = None
    assert _verdict(raw) == "unverified"


def test_move_effect_confirmed_absent_is_tool_failed_and_safe_to_retry() -> None:
    raw = raw_by_id("seed002_sessions.jsonl", "timeout-after-possible-side-effect")
    raw["call"]["effect"] = {"observed": False, "method": "destination_query"}
    row = judge(record(raw))[0]
    assert (row["verdict"], row["nextAction"]) == ("tool_failed", "retry_within_budget")


def test_move_timeout_on_read_only_tool_is_tool_failed() -> None:
    raw = raw_by_id("seed002_sessions.jsonl", "timeout-after-possible-side-effect")
    raw["call"]["readOnly"] = True
    row = judge(record(raw))[0]
    assert (row["verdict"], row["nextAction"]) == ("tool_failed", "inspect_tool")


def test_move_missing_annotation_assumes_side_effect() -> None:
    raw = raw_by_id("seed002_sessions.jsonl", "timeout-after-possible-side-effect")
    raw["call"]["readOnly"] = None
    assert _verdict(raw) == "effect_unknown"


def test_move_progress_stops_and_the_idle_window_expires() -> None:
    raw = raw_by_id("seed002_sessions.jsonl", "long-call-valid-progress")
    assert _verdict(raw) == "working"
    raw["progress"]["now"] = "2026-11-30T10:00:46Z"  # 21 s after the last valid progress
    assert _verdict(raw) == "effect_unknown"
    raw["call"]["readOnly"] = True
    assert _verdict(raw) == "tool_failed"


def test_move_endless_progress_cannot_outlive_the_absolute_deadline() -> None:
    raw = raw_by_id("seed002_sessions.jsonl", "long-call-valid-progress")
    raw["progress"]["deadlineSeconds"] = 31
    assert _verdict(raw) == "working"
    raw["progress"]["now"] = "2026-11-30T10:00:31.5Z"
    raw["progress"]["events"].append(
        {"at": "2026-11-30T10:00:31Z", "token": "7", "progress": 3, "total": 3}
    )
    assert _verdict(raw) == "effect_unknown"


def test_move_same_name_new_required_argument_changes_the_digest() -> None:
    raw = raw_by_id("seed000_catalog.jsonl", "same-name-new-required-argument")
    row = judge(record(raw))[0]
    assert row["verdict"] == "stale"
    assert row["discoveredDigest"] != row["clientDigest"]
    names = lambda tools: sorted(t["name"] for t in tools)  # noqa: E731
    discovered = [t for p in raw["discoveries"][0]["pages"] for t in p["tools"]]
    assert names(discovered) == names(raw["clientTools"])  # a names-only inventory sees no change
    raw["clientTools"] = discovered
    row = judge(record(raw))[0]
    # The client installed the new definitions, but still calls read_ticket without projectId.
    assert (row["verdict"], row["reason"]) == ("stale", "missing_required_argument")
    raw["toolCalls"] = [{"name": "read_ticket", "argumentNames": ["projectId", "ticketId"]}]
    assert judge(record(raw))[0]["verdict"] == "converged"
