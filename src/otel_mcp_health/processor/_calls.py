"""A ``tools/call`` span's judgement in its session (private; used by the engine under its lock).

The judgement reads the session's handshake facts, its catalog verdict (judged on what the
call's agent was offered when the span says), the authorization failure the session carries, and
the call's progress when its span has progress events; each is memoized (:mod:`._memo`), and a
finished call outside the clocks is first looked up among the session's repeats
(:mod:`._repeats`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan

from otel_mcp_health import _codec, _sdkspan
from otel_mcp_health import attributes as A
from otel_mcp_health.core.evidence import AuthorizationEvidence, ProgressEvidence
from otel_mcp_health.core.progress import ProgressSummary, clocks, summarize
from otel_mcp_health.core.session import judge_in_session
from otel_mcp_health.core.vocabulary import NS_PER_S
from otel_mcp_health.processor import _repeats
from otel_mcp_health.processor._memo import CallMemo, Decoded, Judged
from otel_mcp_health.processor._memo import judgement as judged_now
from otel_mcp_health.processor._repeats import Repeat
from otel_mcp_health.processor._sessions import Session


def judgement(
    memo: CallMemo,
    span: ReadableSpan,
    attrs: Mapping[str, Any],
    session: Session,
    decoded: Decoded,
    *,
    carried: AuthorizationEvidence | None,
    max_age_s: float,
) -> tuple[Judged, bool, ProgressSummary | None]:
    """:func:`_classify` (through ``memo``), and the call's progress summary when its span has
    progress events or no end time; a finished call outside the clocks (no live state) is a
    repeat the session may have judged already (:mod:`._repeats`)."""
    now, events = span.end_time, _sdkspan.events(span)
    progress = key = None
    if now is None or (events and any(event.name == A.PROGRESS_EVENT for event in events)):
        progress = _progress(span, attrs, events)
    else:
        key, repeat = _repeats.find(session, decoded, now, max_age_s * NS_PER_S)
        if repeat is not None:
            return repeat.judged, repeat.overruled, None
    judged, overruled = _classify(
        memo,
        span,
        attrs,
        events,
        session,
        decoded=decoded,
        carried=carried,
        progress=progress,
        max_age_s=max_age_s,
    )
    if key is not None:
        _repeats.keep(session, key, Repeat(judged, overruled))
    return judged, overruled, None if progress is None else summarize(progress)


def _classify(
    memo: CallMemo,
    span: ReadableSpan,
    attrs: Mapping[str, Any],
    events: Sequence[Event],
    session: Session,
    *,
    decoded: Decoded,
    carried: AuthorizationEvidence | None,
    progress: ProgressEvidence | None,
    max_age_s: float,
) -> tuple[Judged, bool]:
    """The call's judgement, and whether its catalog was judged on its agent's model request
    against a reported install that reads otherwise (docs/model.md#agents: the model request
    wins).

    ``progress``: the call's progress evidence when its span has progress events or no end
    time (``None``: outside the clocks, built only when the judgement is not memoized).
    """
    now = span.end_time
    call = decoded.call if carried is None else replace(decoded.call, authorization=carried)
    facts = memo.handshake_facts(session)
    catalog = memo.catalog_result(session, now, max_age_s)
    offered = None
    if decoded.offered is not None:
        offered = memo.offered_result(session, catalog, decoded.offered, now, max_age_s)
        catalog = offered.result
    live = None if progress is None else clocks(progress).live_state
    context = memo.context(session, facts, catalog, carried=carried, live=live, offered=offered)
    judged = decoded.judged.get(context)
    if judged is None:
        progress = progress or _progress(span, attrs, events)
        outcome = judge_in_session(call, progress, handshake=facts, catalog=catalog)
        judged = memo.remember(decoded, context, judged_now(call, outcome))
    return judged, offered is not None and offered.overruled


def _progress(
    span: ReadableSpan, attrs: Mapping[str, Any], events: Sequence[Event]
) -> ProgressEvidence:
    now = span.end_time
    return _codec.decode_progress(
        attrs, events, started_at=span.start_time, now=now, completed_at=now
    )
