"""Progress and the two clocks (docs/model.md#contract): working, or stuck?

A long call may justify ``working`` while it is inside **both** clocks:

* the **idle window**: time since the last *valid* progress notification (or since the request
  when there was none). Valid progress resets it.
* the **absolute deadline**: time since the request. Nothing resets it, so an endless stream of
  progress cannot keep a call "working" forever.

A progress notification is *valid* when it carries the request's own token, its value is
strictly greater than the previous valid value, and it arrived before the terminal response.
A repeated value, a token of another request, or progress after the response is inconsistent
evidence: it is counted in the summary and never extends a clock. A clock has expired when the
elapsed time is strictly greater than its length.
"""

from __future__ import annotations

from dataclasses import dataclass

from otel_mcp_health.core.evidence import ProgressEvidence
from otel_mcp_health.core.vocabulary import NS_PER_S, LiveState


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressSummary:
    """What the finished call span carries about its progress notifications."""

    count: int
    valid_count: int
    monotonic: bool
    max_gap_seconds: float | None
    late_count: int
    wrong_token_count: int
    last_valid_at: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClockState:
    """The two clocks of an in-flight call at ``now``: ``working`` inside both, else ``stalled``."""

    live_state: LiveState | None


def summarize(progress: ProgressEvidence) -> ProgressSummary:
    """Count, validate and measure the gaps of a request's progress notifications."""
    events = sorted(progress.events, key=lambda e: e.at)
    valid = 0
    late = 0
    wrong = 0
    monotonic = True
    last_value: float | None = None
    last_valid_at: int | None = None
    max_gap: int | None = None
    previous_at = progress.started_at
    for event in events:
        if previous_at is not None:
            gap = event.at - previous_at
            max_gap = gap if max_gap is None else max(max_gap, gap)
        previous_at = event.at
        if progress.request_token is not None and event.token != progress.request_token:
            wrong += 1
            continue
        if progress.completed_at is not None and event.at > progress.completed_at:
            late += 1
            continue
        if last_value is not None and event.progress <= last_value:
            monotonic = False
            continue
        valid += 1
        last_value = event.progress
        last_valid_at = event.at
    return ProgressSummary(
        count=len(events),
        valid_count=valid,
        monotonic=monotonic,
        max_gap_seconds=max_gap / NS_PER_S if max_gap is not None else None,
        late_count=late,
        wrong_token_count=wrong,
        last_valid_at=last_valid_at,
    )


def clocks(progress: ProgressEvidence) -> ClockState:
    """Evaluate both clocks for an in-flight call (``live_state`` is ``None`` once finished).

    Missing evidence is never green: without ``now`` and ``started_at``, or with neither clock
    configured, the call cannot be shown to be inside its clocks and counts as ``stalled``.
    """
    if not progress.in_flight:
        return ClockState(live_state=None)
    now, started = progress.now, progress.started_at
    idle, deadline = progress.idle_window_seconds, progress.deadline_seconds
    if now is None or started is None or (idle is None and deadline is None):
        return ClockState(live_state=LiveState.STALLED)
    summary = summarize(progress)
    since = summary.last_valid_at if summary.last_valid_at is not None else started
    idle_elapsed = (now - since) / NS_PER_S
    deadline_elapsed = (now - started) / NS_PER_S
    expired = (deadline is not None and deadline_elapsed > deadline) or (
        idle is not None and idle_elapsed > idle
    )
    return ClockState(live_state=LiveState.STALLED if expired else LiveState.WORKING)
