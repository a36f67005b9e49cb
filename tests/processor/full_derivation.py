"""The full derivation: the oracle the incremental engine is compared with (tests only).

The engine (``processor/_engine.py``) judges a call from the session's memoized handshake facts
and catalog verdict and memoizes the judgement per call shape (``processor/_memo.py``).
:class:`FullDerivation` re-derives everything for every span, the way the engine did before it
memoized: each call span's attributes are decoded afresh, the catalog verdict is classified from
the session's whole catalog evidence, and each call is judged by
:func:`~otel_mcp_health.core.session.classify_session` over the whole session (handshake,
catalog, call, progress). It shares with the engine only what both must agree on to be compared:
the routing of spans, the folding of evidence into sessions and their servers, the metrics and the
incidents. ``test_engine_differential.py`` replays the same spans into both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.catalog import CatalogResult, classify_catalog
from otel_mcp_health.core.evidence import AuthorizationEvidence, SessionEvidence
from otel_mcp_health.core.progress import ProgressSummary, summarize
from otel_mcp_health.core.session import classify_session
from otel_mcp_health.processor import McpHealthSpanProcessor
from otel_mcp_health.processor._engine import Engine
from otel_mcp_health.processor._memo import CallMemo, Decoded, Judged, decode, judgement
from otel_mcp_health.processor._sessions import Session


class _Unmemoized(CallMemo):
    """Decodes every call span and classifies every catalog afresh (no memo, no cached facts)."""

    def decoded(self, attrs: _codec.Attributes) -> Decoded:
        return decode(attrs)

    def catalog_result(self, session: Session, now: int | None, max_age_s: float) -> CatalogResult:
        return classify_catalog(session.catalog(now, max_age_s))


class FullDerivation(Engine):
    """The engine with every derivation done in full, per span."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._memo = _Unmemoized()

    def _classify_call(
        self,
        span: ReadableSpan,
        attrs: Mapping[str, Any],
        session: Session,
        decoded: Decoded,
        carried: AuthorizationEvidence | None,
    ) -> tuple[Judged, ProgressSummary | None]:
        """The call judged by re-deriving its whole session; its progress summary when it has
        progress events (or is still open)."""
        now, events = span.end_time, span.events
        progress = _codec.decode_progress(
            attrs, events, started_at=span.start_time, now=now, completed_at=now
        )
        has_progress = now is None or any(event.name == A.PROGRESS_EVENT for event in events)
        call = decoded.call if carried is None else replace(decoded.call, authorization=carried)
        evidence = SessionEvidence(
            handshake=session.handshake,
            catalog=session.catalog(now, self._max_age_s),
            call=call,
            progress=progress,
        )
        summary = summarize(progress) if has_progress else None
        return judgement(call, classify_session(evidence)), summary


def install(processor: McpHealthSpanProcessor) -> None:
    """Make ``processor`` judge with the full derivation (before it has seen any span)."""
    engine = processor._engine
    processor._engine = FullDerivation(
        metrics=engine._metrics,
        store=engine.sessions,
        max_age_s=engine._max_age_s,
        supported_versions=engine._supported,
        has_live_calls=engine._has_live_calls,
    )
