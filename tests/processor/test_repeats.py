"""The per-session memo of whole call judgements (``_repeats``) is dropped by every change it
depends on.

Each stream repeats one call shape before and after one change of what the call's judgement
reads (the handshake, a discovery, an install, a signal, a finding, an authorization failure,
another session of the server, the refresh deadline passing, the server the session names), and
the repeated call must be judged differently afterwards: as the contract oracle judges it and as
the processor without memos judges it. A stream whose second call were answered from the memo
kept before the change would export the first call's verdict again, so each test fails if the
change no longer invalidates the memo. A last test checks that the repeats are served from the
memo at all, and that a session keeps a bounded number of them.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.processor.replay import Recorder, assert_oracle_agrees, replay
from tests.processor.test_engine_differential import (
    _SLOTS,
    _call_event,
    _handshake,
    _page_event,
    _Slots,
)
from tests.support.processor_helpers import DIGEST, OTHER_DIGEST, SessionSpans

from otel_mcp_health import attributes as A
from otel_mcp_health.processor import _repeats
from otel_mcp_health.processor._engine import Engine

#: What tells two judgements of a call apart.
_VERDICT_KEYS = (
    A.VERDICT,
    A.REASON,
    A.CALL_FIRST_FAILED_LAYER,
    A.CATALOG_VERDICT,
    A.CATALOG_REASON,
)

_Stream = list[tuple[str, float, dict[str, Any]]]

_INSTALL = {"kind": "install", "digest": OTHER_DIGEST, "check": None}
#: (id, stream): the first and the last call of each stream have the same shape, with one change
#: of the session (or of its server) in between.
_CHANGES: tuple[tuple[str, _Stream], ...] = (
    (
        "handshake",  # answered again with a version the client does not support
        [
            ("s1", 1.0, _page_event("whole")),
            ("s1", 1.0, _call_event()),
            ("s1", 1.0, {**_handshake(), "negotiated": "1999-01-01"}),
            ("s1", 1.0, _call_event()),
        ],
    ),
    (
        "discovery",
        [
            ("s1", 1.0, _call_event()),
            ("s1", 1.0, _page_event("whole")),
            ("s1", 1.0, _call_event()),
        ],
    ),
    (
        "install",  # the agent installed tools that differ from the discovery
        [
            ("s1", 1.0, _page_event("whole")),
            ("s1", 1.0, _call_event()),
            ("s1", 1.0, _INSTALL),
            ("s1", 1.0, _call_event()),
        ],
    ),
    (
        "signal",
        [
            ("s1", 1.0, _page_event("whole")),
            ("s1", 1.0, _call_event()),
            ("s1", 1.0, {"kind": "signal"}),
            ("s1", 1.0, _call_event()),
        ],
    ),
    (
        "finding",  # a call of an unknown tool (another shape) in between
        [
            ("s1", 1.0, _page_event("whole")),
            ("s1", 1.0, _call_event(contract="ok")),
            ("s1", 1.0, _call_event(contract="unknown_tool")),
            ("s1", 1.0, _call_event(contract="ok")),
        ],
    ),
    (
        "authorization",  # a refused call in between: the failure carries to the next one
        [
            ("s1", 1.0, _page_event("whole")),
            ("s1", 1.0, _call_event(status=None)),
            ("s1", 1.0, _call_event(status=401)),
            ("s1", 1.0, _call_event(status=None)),
        ],
    ),
    (
        "authorization-cleared",  # an authorized call in between clears the failure
        [
            ("s1", 1.0, _page_event("whole")),
            ("s1", 1.0, _call_event(status=401)),
            ("s1", 1.0, _call_event(status=None)),
            ("s1", 1.0, _call_event(status=200)),
            ("s1", 1.0, _call_event(status=None)),
        ],
    ),
    (
        "server",  # another session of the server receives a signal: s2's inherited catalog
        [
            ("s1", 1.0, _page_event("whole")),
            ("s2", 1.0, _call_event()),
            ("s1", 1.0, {"kind": "signal"}),
            ("s2", 1.0, _call_event()),
        ],
    ),
    (
        "refresh-deadline",  # nothing but time: the catalog's refresh is overdue (max age 300 s)
        [
            ("s1", 1.0, _page_event("whole")),
            ("s1", 1.0, _call_event()),
            ("s1", 400.0, _call_event()),
        ],
    ),
    (
        "joined-server",  # the session's handshake names another server, with a discovery
        [
            ("s2", 1.0, {**_handshake(), "server": "b"}),
            ("s2", 1.0, _page_event("whole")),
            ("s1", 1.0, _call_event()),
            ("s1", 1.0, {**_handshake(), "server": "b"}),
            ("s1", 1.0, _call_event()),
        ],
    ),
)
#: How each stream's sessions open, where it is not :func:`_handshake`: without a server (the
#: session's own state is all its calls are judged on: nothing shared changes with it), or
#: unable to hear changes (``tools.listChanged`` false: the refresh deadline judges the catalog).
_OPENINGS: dict[str, dict[str, Any]] = {
    "discovery": {"server": None},
    "install": {"server": None},
    "signal": {"server": None},
    "refresh-deadline": {"list_changed": False},
}


def _record(stream: _Stream, **opening_changes: Any) -> Recorder:
    recorder = Recorder()
    opening = {**_handshake(), **opening_changes}
    slots = _Slots(recorder, dict.fromkeys(_SLOTS, opening))
    at = 0.0
    for slot, step, event in stream:
        at += step
        slots.emit(slot, at, event)
    return recorder


def _verdict(span: Any) -> dict[str, Any]:
    return {k: (span.attributes or {}).get(k) for k in _VERDICT_KEYS}


@pytest.mark.parametrize(("change", "stream"), _CHANGES, ids=[c[0] for c in _CHANGES])
def test_a_change_drops_the_kept_judgements(change: str, stream: _Stream) -> None:
    recorder = _record(stream, **_OPENINGS.get(change, {}))
    events = recorder.collect.events
    assert_oracle_agrees(events)
    memoized, memoized_points = replay(events)
    fresh, fresh_points = replay(events, memoized=False)
    assert [dict(s.attributes or {}) for s in memoized] == [dict(s.attributes or {}) for s in fresh]
    assert memoized_points == fresh_points
    calls = [s for s in memoized if s.name.startswith("tools/call")]
    first, last = calls[0], calls[-1]
    assert _verdict(first) != _verdict(last)  # the change matters to the call's judgement


def _engine(processor: Any) -> Engine:
    engine: Engine = processor._engine
    return engine


def test_repeated_calls_are_served_from_the_memo_and_bounded() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_mcp_health.processor import McpHealthSpanProcessor
    from otel_mcp_health.processor._spans import INSTRUMENTATION_SCOPE

    exporter = InMemorySpanExporter()
    processor = McpHealthSpanProcessor(
        SimpleSpanProcessor(exporter), meter_provider=MeterProvider()
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    spans = SessionSpans(provider.get_tracer(INSTRUMENTATION_SCOPE))
    spans.converged()
    session = _engine(processor).sessions.touch(spans.key, 0)
    spans.call("lookup", start=1.0, end=1.1)
    kept = dict(session.repeats.kept)
    assert len(kept) == 1
    for n in range(5):
        spans.call("lookup", start=2.0 + n, end=2.1 + n)
    assert session.repeats.kept == kept  # the same judgement, found again
    calls = [s for s in exporter.get_finished_spans() if s.name.startswith("tools/call")]
    assert len({tuple(sorted(_verdict(s).items())) for s in calls}) == 1
    for n in range(3 * _repeats.MAX_REPEATS):  # as many shapes: a different tool each
        spans.call(f"tool-{n}", start=10.0 + n, end=10.1 + n)
        assert 0 < len(session.repeats.kept) <= _repeats.MAX_REPEATS
    assert DIGEST  # the helpers' digest is the discovery's (imported for the streams)
