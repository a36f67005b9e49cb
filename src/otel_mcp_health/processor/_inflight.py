"""Open ``tools/call`` spans for the in-flight gauge (processor shell, private).

The processor keeps, per open span, ``span id -> (span, session key)``: the key of one of our
``tools/call`` spans is known at its start when the span starts with its attributes; one of our
spans that starts without them (the instrumentation writes them right after, where nothing looks
at them in between: ``otel_mcp_health._sdkspan.StartWrites``) and another library's CLIENT span
are kept with ``None``, because their method and session key are known only once the request
started (a span is a live call only if it then carries our ``tools/call`` evidence, read when
counting). The map needs no lock: each
dict operation is atomic (the GIL, or the dict's own lock on free-threaded builds), readers
iterate over a snapshot, and the bound may be overshot by one per thread starting a span at that
very moment.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Mapping
from typing import Final

from opentelemetry.sdk.trace import Span

from otel_mcp_health import _codec, _sdkspan
from otel_mcp_health.core.progress import clocks
from otel_mcp_health.core.vocabulary import TOOLS_CALL, LiveState
from otel_mcp_health.processor import _spans

_logger = logging.getLogger(__name__)
#: Live ``tools/call`` spans tracked at once.
MAX_LIVE: Final = 10_000
#: Other libraries' open CLIENT spans are tracked only while the map is below this: spans an
#: application leaks (never ended) can never crowd out our own calls.
MAX_FOREIGN: Final = MAX_LIVE // 2
#: span id -> (span, session key; ``None`` for another library's span, read when counting)
Live = dict[int, tuple[Span, str | None]]


def track(live: Live, span: Span) -> None:
    """One of our spans starts: kept while open if it is a ``tools/call``, or may be one (it
    carries no attribute yet: a request span whose attributes are written right after). Our
    other spans start with their attributes (a connection's span lives as long as its session)
    and are never kept."""
    attrs = _sdkspan.open_attributes(span)
    if len(live) >= MAX_LIVE:
        return
    if not attrs:
        live[span.context.span_id] = (span, None)
    elif _spans.method(attrs) == TOOLS_CALL:
        live[span.context.span_id] = (span, _spans.session_key(attrs))


def room_for_foreign(live: Live) -> bool:
    """Whether another library's open CLIENT span may still be tracked (:data:`MAX_FOREIGN`)."""
    return len(live) < MAX_FOREIGN


def calls(live: Live) -> list[tuple[Span, str]]:
    """The open ``tools/call`` spans with their session keys (from a snapshot)."""
    found = []
    for span, key in list(live.values()):
        known = _key(span, key)
        if known is not None:
            found.append((span, known))
    return found


def has_calls(live: Live, key: str) -> bool:
    """Whether session ``key`` has an open ``tools/call`` span."""
    return any(known == key for _, known in calls(live))


def in_flight_counts(live: Live) -> Mapping[LiveState, int]:
    """The open calls per live state (the gauge's callback)."""
    now = time.time_ns()
    counts: Counter[LiveState] = Counter()
    for span, _ in calls(live):
        try:
            counts[_state(span, now)] += 1
        except Exception:
            _logger.debug("mcp_health: live state failed", exc_info=True)
    return counts


def _state(span: Span, now: int) -> LiveState:
    attrs = span.attributes or {}
    if _codec.decode_waiting_for_user(attrs):
        return LiveState.WAITING_FOR_USER
    progress = _codec.decode_progress(
        attrs, span.events, started_at=span.start_time, now=now, completed_at=None
    )
    return clocks(progress).live_state or LiveState.STALLED


def _key(span: Span, key: str | None) -> str | None:
    """The session key of a live call: known at its start, or added since (a borrowed span that
    turned out to be a ``tools/call`` of an instrumented session); ``None`` for other spans."""
    if key is not None:
        return key
    attrs = span.attributes or {}
    return _spans.session_key(attrs) if _spans.method(attrs) == TOOLS_CALL else None
