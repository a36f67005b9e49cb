"""The verdict engine behind :class:`~otel_mcp_health.McpHealthSpanProcessor` (private).

The processor routes each finished MCP span here; the engine keeps the per-session facts
(:mod:`otel_mcp_health.processor._sessions`), judges the span with the pure core (the same rules the
offline classifier runs, docs/model.md) and counts the verdict metrics. It returns the verdict
attributes to add to the span's exported copy. Not thread-safe by itself: :meth:`Engine.judge`
takes the engine's lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final

from opentelemetry.sdk.trace import ReadableSpan

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.calls import CallResult
from otel_mcp_health.core.contract import VERDICT_RULES
from otel_mcp_health.core.evidence import (
    AuthorizationEvidence,
    SessionEvidence,
)
from otel_mcp_health.core.rules import Decision
from otel_mcp_health.core.server import CatalogKey
from otel_mcp_health.core.session import classify_session
from otel_mcp_health.core.vocabulary import (
    NS_PER_S,
    TOOLS_CALL,
    TOOLS_LIST,
    CatalogVerdict,
    ClientSource,
    Era,
    FirstFailedLayer,
    LayerStatus,
)
from otel_mcp_health.processor import _calls, _spans, _verdicts
from otel_mcp_health.processor._incidents import Incidents, SilentCall, SilentCalls
from otel_mcp_health.processor._memo import MAX_CELLS, CallMemo, Decoded, Judged
from otel_mcp_health.processor._servers import ServerCatalogs
from otel_mcp_health.processor._sessions import Session
from otel_mcp_health.processor._store import SessionStore
from otel_mcp_health.processor.metrics import HealthMetrics

_HANDSHAKES: Final = frozenset(era.value for era in Era)
_RULES: Final = {rule.name: rule for rule in VERDICT_RULES}
#: The contract rows whose verdict goes on a handshake span (docs/model.md#precedence).
_HANDSHAKE_FAILED: Final = _RULES["handshake_failed"]
_HANDSHAKE_RULES: Final = frozenset((_HANDSHAKE_FAILED, _RULES["incompatible_session"]))


class Engine:
    """Per-session facts, verdicts and metrics for finished MCP spans."""

    def __init__(
        self,
        *,
        metrics: HealthMetrics,
        store: SessionStore,
        max_age_s: float,
        supported_versions: tuple[str, ...],
        has_live_calls: Callable[[str], bool],
    ) -> None:
        self.sessions = store
        self._metrics = metrics
        self._max_age_s = max_age_s
        self._supported = supported_versions
        self._has_live_calls = has_live_calls
        self._incidents = Incidents()
        self._silent = SilentCalls()
        self._servers = ServerCatalogs()
        self._lock = threading.Lock()
        self._memo = CallMemo()

    def clear(self) -> None:
        """Forget every session, incident and silent call (shutdown)."""
        with self._lock:
            self.sessions.clear()
            self._incidents.clear()
            self._silent.clear()
            self._servers.clear()

    def judge(self, span: ReadableSpan, attrs: Mapping[str, Any], key: str) -> dict[str, Any]:
        """The verdict attributes of one finished span of session ``key`` (may be empty)."""
        with self._lock:
            now = span.end_time or 0
            late = self.sessions.late(key, now)
            if late is not None:
                return self._judge_late(span, attrs, late)
            session = self.sessions.touch(key, now)
            verdicts: dict[str, Any] = {}
            if span.name == A.SESSION_END_SPAN_NAME:
                session.closing = True
            else:
                session.server = self._memo.session_server(attrs, session)
                verdicts = self._route(span, attrs, session)
            # A call span may end after its session (its end waits for an outcome receipt).
            if session.closing and not self._has_live_calls(key):
                self.sessions.release(key)
            return verdicts

    def _judge_late(
        self, span: ReadableSpan, attrs: Mapping[str, Any], late: Session
    ) -> dict[str, Any]:
        """A span of a session that already ended: judged as its server's, in a session that
        is never stored, so the ended session never comes back (docs/model.md#scope)."""
        if span.name == A.SESSION_END_SPAN_NAME:
            return {}
        if late.server.catalog is not None:
            self._join(late, late.server.catalog)
        late.server = self._memo.session_server(attrs, late)
        try:
            return self._route(span, attrs, late)
        finally:
            late.leave()

    def _join(self, session: Session, catalog: CatalogKey) -> None:
        """The session belongs to the server of ``catalog`` (its catalog is shared from now on)."""
        session.server = replace(session.server, catalog=catalog)
        session.join(self._servers.touch(catalog))

    def _route(
        self, span: ReadableSpan, attrs: Mapping[str, Any], session: Session
    ) -> dict[str, Any]:
        method = _spans.method(attrs)
        if method == TOOLS_CALL:
            verdicts = self._judge_call(span, attrs, session)
            _verdicts.add_server_name(verdicts, attrs, session.server.label.name)
            return verdicts
        if method == TOOLS_LIST:
            return self._judge_page(span, attrs, session)
        if method in _HANDSHAKES or span.name == A.CONNECT_SPAN_NAME:
            return self._judge_handshake(span, attrs, session)
        if method == A.NOTIFICATION_SPAN_METHOD:
            if span.start_time is not None:
                session.add_signal(span.start_time)
            return self._judge_catalog(span, session, method)
        if span.name == A.CHANNEL_SPAN_NAME:
            if (opened := _codec.decode_channel_open(attrs)) is not None:
                channel = attrs.get(A.SESSION_NOTIFICATION_CHANNEL)
                session.channel_changed(opened=opened, channel=channel)
            return {}
        if span.name == A.RECONCILE_SPAN_NAME:
            return self._judge_reconciliation(span, attrs, session)
        if span.name == A.INSTALL_SPAN_NAME:
            if (catalog := _codec.decode_catalog_key(attrs)) is not None:
                self._join(session, catalog)
            digest, error = _codec.decode_digest(attrs, of="client")
            session.set_install(digest, error, _codec.decode_install_check(attrs))
            return self._judge_catalog(span, session, A.INSTALL_SPAN_NAME)
        return {}

    # ------------------------------------------------------------------------------------------
    # Catalog
    # ------------------------------------------------------------------------------------------
    def _judge_catalog(self, span: ReadableSpan, session: Session, kind: str) -> dict[str, Any]:
        now = span.end_time
        result = self._memo.catalog_result(session, now, self._max_age_s)
        labels = {
            A.CATALOG_VERDICT: result.verdict.value,
            A.CATALOG_REASON: str(result.reason),
            A.MCP_METHOD_NAME: kind,
            **_server_labels(session),
        }
        self._metrics.catalog_verdicts.add(1, labels)
        if (
            result.verdict is CatalogVerdict.CONVERGED
            and session.pending_signal is not None
            and now is not None
        ):
            lag = (now - session.pending_signal) / NS_PER_S
            session.pending_signal = None
            self._metrics.convergence_lag.record(lag, _server_labels(session))
        return _verdicts.catalog_and_readiness_attributes(result, session.unhealthy_handshake)

    def _judge_page(
        self, span: ReadableSpan, attrs: Mapping[str, Any], session: Session
    ) -> dict[str, Any]:
        if not _spans.is_application_page(attrs):
            return {}
        page = _codec.decode_page(attrs)
        index = _codec.decode_page_index(attrs)
        digest, error = _codec.decode_digest(attrs)
        final = session.add_page(
            page,
            first=index == 0 or page.cursor is None,
            started_at=span.start_time,
            ended_at=span.end_time,
            digest=digest,
            digest_error=error,
        )
        self._metrics.count_approval(attrs, _server_labels(session))  # on a complete discovery
        return self._judge_catalog(span, session, TOOLS_LIST) if final else {}

    # ------------------------------------------------------------------------------------------
    # Handshake
    # ------------------------------------------------------------------------------------------
    def _judge_handshake(
        self, span: ReadableSpan, attrs: Mapping[str, Any], session: Session
    ) -> dict[str, Any]:
        if _codec.decode_superseded(attrs):
            return {}  # one attempt, judged on the fallback handshake that followed
        evidence = _codec.decode_handshake(attrs, self._supported)
        result = classify_session(SessionEvidence(handshake=evidence)).call
        rule = _RULES[result.rule]
        if rule is _HANDSHAKE_FAILED:
            if isinstance(evidence.authorization, AuthorizationEvidence) and (
                result.first_failed_layer is FirstFailedLayer.AUTHORIZATION
            ):
                session.authorization(evidence.authorization)
        else:
            session.answered(evidence)
            session.channel = _codec.decode_channel(attrs)
            if (catalog := _codec.decode_catalog_key(attrs)) is not None:
                self._join(session, catalog)
            session.update_listening()  # what it advertises now, whatever server it names
            unhealthy = rule in _HANDSHAKE_RULES
            decision = Decision(result.verdict, result.reason, result.next_action)
            session.unhealthy_handshake = decision if unhealthy else None
            if not unhealthy:
                return {}
        verdicts = _verdicts.handshake_attributes(result)
        self._open_incident(span, session, result=result, verdicts=verdicts)
        return verdicts

    # ------------------------------------------------------------------------------------------
    # Calls and reconciliations
    # ------------------------------------------------------------------------------------------
    def _judge_call(
        self, span: ReadableSpan, attrs: Mapping[str, Any], session: Session
    ) -> dict[str, Any]:
        if attrs.get(A.TRANSPORT_REQUEST_WRITTEN) is False and _codec.decode_cancelled(attrs):
            return {}  # cancelled before the request was written: no call (docs/model.md)
        decoded = self._memo.session_decoded(attrs, session)
        if decoded.finding is not None:
            session.add_finding(decoded.finding)
        # "no authorized exchange has succeeded since": a failure carries forward.
        carried = session.auth_failure if decoded.call.authorization is None else None
        judged, overruled, summary = _calls.judgement(
            self._memo, span, attrs, session, decoded, carried=carried, max_age_s=self._max_age_s
        )
        call, result = judged.call, judged.result
        _remember_authorization(session, judged)
        # A silent call is remembered so that its reconciliation span can re-judge it.
        if result.effect_unknown and span.context is not None:
            silent = SilentCall(call, session.handshake, judged.catalog_verdict)
            self._silent.remember(span.context.span_id, silent)
        self._count_call(session, decoded, judged)
        verdicts = dict(judged.verdicts)
        verdicts.update(_verdicts.inherited_attributes(session, span.end_time))
        if overruled:
            verdicts[A.CATALOG_OVERRULED_SOURCE] = ClientSource.REGISTERED.value
        if summary is not None and summary.count:
            verdicts.update(_verdicts.progress_attributes(summary))
        self._open_incident(span, session, result=result, verdicts=verdicts)
        return verdicts

    def _count_call(self, session: Session, decoded: Decoded, judged: Judged) -> None:
        """``mcp_health.calls`` and ``mcp_health.outcomes``, through cells kept per judgement."""
        label = session.server.label
        if label is judged.last_label:
            self._metrics.count(judged.last_cells)
            return
        cells = judged.cells.get(label)
        if cells is None:
            if len(judged.cells) >= MAX_CELLS:
                judged.cells.clear()
            cells = judged.cells[label] = self._metrics.call_cells(
                judged.result,
                tool=decoded.call.tool or "",
                receipt=decoded.receipt,
                method=decoded.method,
                server=_server_labels(session),
            )
        judged.last_label, judged.last_cells = label, cells
        self._metrics.count(cells)

    def _judge_reconciliation(
        self, span: ReadableSpan, attrs: Mapping[str, Any], session: Session
    ) -> dict[str, Any]:
        """Re-judge the silent call the ``mcp_health.reconcile`` span links to, with what
        reconciliation found, in the session it ran in (docs/model.md#silence); without that
        call (evicted or not sampled) the span keeps its evidence only."""
        effect = _codec.decode_effect(attrs)
        silent = next(
            (
                found
                for link in span.links
                if (found := self._silent.take(link.context.span_id)) is not None
            ),
            None,
        )
        if effect is None or silent is None:
            return {}
        call = replace(silent.call, effect=effect, outcome=_codec.decode_outcome(attrs))
        result = classify_session(
            SessionEvidence(
                handshake=silent.handshake, catalog_verdict=silent.catalog_verdict, call=call
            )
        ).call
        verdicts = _verdicts.call_attributes(result)
        self._open_incident(span, session, result=result, verdicts=verdicts)
        return verdicts

    # ------------------------------------------------------------------------------------------
    # Incidents
    # ------------------------------------------------------------------------------------------
    def _open_incident(
        self,
        span: ReadableSpan,
        session: Session,
        *,
        result: CallResult,
        verdicts: dict[str, Any],
    ) -> None:
        """Key a non-green verdict as an incident of the session's server
        (:meth:`Incidents.judge`) and count each incident once, when it opens."""
        if self._incidents.judge(span.resource, session.server.scope, result, verdicts):
            layer = result.first_failed_layer
            labels = {A.VERDICT: result.verdict.value, A.CALL_FIRST_FAILED_LAYER: layer.value}
            self._metrics.incidents.add(1, {**labels, **_server_labels(session)})


def _server_labels(session: Session) -> dict[str, Any]:
    """The exported server label of the session's server (docs/model.md#scope)."""
    return _codec.label_attributes(session.server.label)


def _remember_authorization(session: Session, judged: Judged) -> None:
    """A failure holds until an authorized exchange succeeds."""
    if judged.authorization is LayerStatus.FAILED and isinstance(
        judged.call.authorization, AuthorizationEvidence
    ):
        session.authorization(judged.call.authorization)
    elif judged.authorization is LayerStatus.PASSED:
        session.authorization(None)
