"""Pending model answers are bounded in the snapshots they hold (instrumentation/_answers.py)."""

from __future__ import annotations

from dataclasses import dataclass

from otel_mcp_health.instrumentation._answers import MAX_OWNER_BYTES, Answers


@dataclass(frozen=True)
class _Owner:
    """A stand-in for an agent's snapshot: only its estimated size counts here."""

    size: int


def test_the_snapshots_pending_answers_hold_stay_within_their_byte_bound() -> None:
    answers = Answers()
    big = MAX_OWNER_BYTES // 3
    owners = [_Owner(big) for _ in range(10)]
    for owner in owners:
        answers.remember(owner, [("create_ticket", None), ("fail", None)])
    held = {id(p.owner): p.owner for p in answers._pending}
    assert sum(o.size for o in held.values()) <= MAX_OWNER_BYTES
    # the newest answers are the ones kept, both calls of each
    assert list(held.values()) == owners[-3:]
    assert len(answers) == 6


def test_small_snapshots_are_bounded_by_count_only() -> None:
    answers = Answers(max_pending=4)
    for n in range(10):
        answers.remember(_Owner(100), [(f"t{n}", None)])
    assert len(answers) == 4
