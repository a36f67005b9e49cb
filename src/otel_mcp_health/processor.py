"""``McpHealthSpanProcessor``: verdicts on exported MCP spans, and the verdict metrics.

The instrumentation (:class:`otel_mcp_health.instrumentation.McpHealthInstrumentor`) records
small, safe *evidence* on the MCP client spans while they are open. This processor turns that
evidence into *verdicts* (SPEC §3 to §6) with the same pure classifiers that
``otel-mcp-health classify`` runs on evidence files, and hands the exporter a copy of each MCP span
with the verdict attributes added.

Why it wraps the exporter
=========================

OpenTelemetry Python freezes a span before any processor sees it end, so a processor cannot add
attributes to the span itself. The supported way is to *own* the exporting processor and hand it
an enriched copy. Build your pipeline like this::

    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from otel_mcp_health import McpHealthSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(McpHealthSpanProcessor(BatchSpanProcessor(OTLPSpanExporter())))
    trace.set_tracer_provider(provider)

Do **not** also add the ``BatchSpanProcessor`` to the provider yourself: it would export every
span a second time, without verdicts. ``downstream`` may be one processor or a sequence of them
(one per exporter); ``shutdown`` and ``force_flush`` reach every one.

Zero-code: ``opentelemetry-instrument`` with ``OTEL_PYTHON_CONFIGURATOR=mcp_health`` does exactly
this for every configured trace exporter (see :mod:`otel_mcp_health.configurator`).

What it adds
============

On every ``tools/call`` span: ``mcp_health.verdict`` and ``mcp_health.next_action`` (the session
contract, SPEC §5), ``mcp_health.reason``, ``mcp_health.call.first_failed_layer``,
``mcp_health.call.reason``, one ``mcp_health.layer.<layer>`` per layer, the catalog verdict
(``mcp_health.catalog.verdict``/``reason``/``digest``/``client_digest``/``client_source``/
``max_age_s``), ``mcp_health.effect.unknown`` when a possible side effect is unreconciled,
``mcp_health.incident.key`` on every verdict other than ``healthy``, ``unverified`` and ``working``
(with ``mcp_health.incident.attempt`` and, beyond the failed layer's retry budget of
:mod:`otel_mcp_health.core.retries`, ``mcp_health.retry.over_budget``),
and the progress summary (``mcp_health.progress.*``). ``mcp_health.retry.unreconciled`` (a retry of
a side-effecting call after ``effect_unknown`` without reconciliation) is recorded by the
instrumentation, which correlates arguments in memory, and is forwarded as is.

On an ``mcp_health.reconcile`` span (what a destination query or idempotency-key lookup found,
linked to the silent call): the silent call judged again with that evidence (SPEC §5 rule 4),
e.g. ``tool_failed`` / ``retry_within_budget`` when the effect is confirmed absent.

On the page that ends a ``tools/list`` traversal (or fails it), on ``list_changed`` spans and on
``mcp_health.install`` spans: the catalog verdict. On a failed handshake span (``initialize`` /
``server/discover``): the verdict of its first failed layer (``transport_error``, ``needs_auth``,
``protocol_error``, ``incompatible_session``); also on a handshake that negotiated a version the
client does not support. A ``server/discover`` probe that the client answered by falling back to
``initialize`` (a protocol-level error other than ``-32022``) is not a failure and gets no verdict.

Non-MCP spans (any span whose instrumentation scope is not ``otel_mcp_health.instrumentation``)
are forwarded as the very same object after one attribute comparison. If the processor's own code
fails on a span, the original span is forwarded unchanged and the error is logged at debug level;
the host never sees an exception from it.

Privacy: in the copy, a status description becomes the span's sanitized ``error.type``, and
exception events keep only ``exception.type``, whatever wrote them (SPEC §2).

Sampling: verdicts are computed from the spans the processor sees
===================================================================

A span processor sees only spans the sampler *records*. A session's verdict depends on earlier
spans of the same session (the handshake, every ``tools/list`` page, ``list_changed`` signals), so
when those are dropped the processor has missing evidence, and missing evidence is never green:
a call whose session lost its handshake span is ``unverified`` (``session_unobserved``), one whose
discovery was dropped is ``stale_catalog`` (``catalog_no_discovery``). Sampling can make verdicts
more pessimistic; it can never make them falsely healthy. The metrics count sampled spans only.

Recommended setting: keep the SDK default ``OTEL_TRACES_SAMPLER=parentbased_always_on`` (record
every span) and sample *after* the verdicts are attached, in the Collector (tail sampling on
``mcp_health.verdict``, e.g. keep every non-healthy trace). If you must sample in the SDK, a
sampler that returns ``RECORD_ONLY`` for the spans it does not export still lets this processor see
them (the exporting processor drops unsampled spans), so verdicts and metrics stay exact.

Live calls
==========

``working`` is a live state, so it is never written on a finished span. The processor keeps the
open ``tools/call`` spans it saw start (at most 10,000) and, each time the metrics are collected,
evaluates the two clocks of each one (the idle window that valid progress resets, recorded as
``mcp_health.call.idle_window_s``, and the absolute deadline ``mcp_health.call.deadline_s``):
``mcp_health.calls.in_flight`` reports ``working``, ``stalled``, and ``waiting_for_user`` for a
call whose span carries ``mcp_health.call.waiting_for_user = true`` (the instrumentation sets it
while an elicitation is answered: waiting on a person is not being stuck). A call whose span stays
open for its outcome verifier's receipt is still in flight until the receipt arrives (bounded by
the verifier's timeout). The other metrics are listed in :mod:`otel_mcp_health.metrics`.

Options
=======

Keyword arguments win over environment variables, which win over the defaults; an invalid
environment value is logged and ignored, an invalid keyword argument raises ``ValueError``:

* ``enabled`` / ``OTEL_INSTRUMENTATION_MCP_HEALTH_PROCESSOR_ENABLED`` (default ``true``);
* ``max_sessions`` / ``OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_SESSIONS`` (default 10000);
* ``session_idle_s`` / ``OTEL_INSTRUMENTATION_MCP_HEALTH_SESSION_IDLE_S`` (default 3600);
* ``catalog_max_age_s`` / ``OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S`` (default 300, the
  bounded refresh policy for servers that do not advertise ``tools.listChanged``);
* ``supported_versions`` / ``OTEL_INSTRUMENTATION_MCP_HEALTH_SUPPORTED_VERSIONS`` (default: the
  published MCP versions, docs/configuration.md);
* ``max_pages`` / ``OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_PAGES`` (default 1000): pages walked per
  ``tools/list`` traversal; a longer catalog is ``incomplete`` (``cursor_remaining``).

State is bounded: at most ``max_sessions`` sessions (LRU), each forgotten after ``session_idle_s``
without spans or on its ``mcp_health.session.end`` span (once its last open ``tools/call`` span,
which may wait for an outcome receipt, has ended), and each holding a fixed number of small records
(:mod:`otel_mcp_health._sessions`). All state sits behind one lock; ``on_end`` does no I/O beyond
what the downstream processor does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_mcp_health import _options, _spans
from otel_mcp_health import attributes as A
from otel_mcp_health import environment_variables as env
from otel_mcp_health._sessions import Incidents, Session, SessionStore, SilentCall, SilentCalls
from otel_mcp_health.core.calls import CallResult
from otel_mcp_health.core.catalog import classify_catalog
from otel_mcp_health.core.evidence import AuthorizationEvidence, SessionEvidence
from otel_mcp_health.core.progress import clocks
from otel_mcp_health.core.retries import over_budget
from otel_mcp_health.core.session import classify_session
from otel_mcp_health.core.vocabulary import (
    DEFAULT_MAX_AGE_SECONDS,
    DEFAULT_SUPPORTED_VERSIONS,
    CatalogVerdict,
    Era,
    FirstFailedLayer,
    Layer,
    LayerStatus,
    LiveState,
    Verdict,
)
from otel_mcp_health.metrics import HealthMetrics

_logger = logging.getLogger(__name__)
_NS_PER_S = 1_000_000_000
_TOOLS_CALL = "tools/call"
_TOOLS_LIST = "tools/list"
_HANDSHAKES = frozenset(era.value for era in Era)
_SERVICE_NAME = "service.name"
_UNKNOWN = "unknown"
#: Verdicts that open no incident: nothing failed (``unverified`` lacks a receipt, it is not an
#: outage; ``working`` is live).
_NO_INCIDENT = frozenset({Verdict.HEALTHY, Verdict.UNVERIFIED, Verdict.WORKING})
#: The handshake rules whose verdict goes on the handshake span (SPEC §5).
_HANDSHAKE_RULES = frozenset({"handshake_failed", "incompatible_session"})
#: Live ``tools/call`` spans tracked for the in-flight gauge.
_MAX_LIVE = 10_000


class McpHealthSpanProcessor(SpanProcessor):
    """Derive MCP health verdicts and hand the downstream processor(s) enriched span copies.

    :param downstream: the exporting processor(s) this processor owns (e.g.
        ``BatchSpanProcessor(OTLPSpanExporter())``). Do not add them to the provider too.
    :param meter_provider: where the verdict metrics go (default: the global provider).
    :param enabled: ``False`` makes the processor a pure pass-through.
    :param max_sessions: most sessions kept at once (LRU eviction).
    :param session_idle_s: a session with no span for this long is forgotten.
    :param catalog_max_age_s: bounded refresh policy for servers without ``tools.listChanged``.
    :param supported_versions: MCP protocol versions the client run supports.
    :param max_pages: pages walked per ``tools/list`` traversal (longer ones are ``incomplete``).
    """

    def __init__(
        self,
        downstream: SpanProcessor | Sequence[SpanProcessor],
        *,
        meter_provider: MeterProvider | None = None,
        enabled: bool | None = None,
        max_sessions: int | None = None,
        session_idle_s: float | None = None,
        catalog_max_age_s: float | None = None,
        supported_versions: Sequence[str] | None = None,
        max_pages: int | None = None,
    ) -> None:
        self._downstream: tuple[SpanProcessor, ...] = (
            (downstream,) if isinstance(downstream, SpanProcessor) else tuple(downstream)
        )
        self._enabled = _options.option(
            "enabled",
            enabled,
            env.OTEL_INSTRUMENTATION_MCP_HEALTH_PROCESSOR_ENABLED,
            _options.flag,
            True,
        )
        sessions = _options.require_positive_int(
            "max_sessions",
            _options.option(
                "max_sessions",
                max_sessions,
                env.OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_SESSIONS,
                _options.positive_int,
                env.DEFAULT_MAX_SESSIONS,
            ),
        )
        idle_s = _options.require_positive(
            "session_idle_s",
            _options.option(
                "session_idle_s",
                session_idle_s,
                env.OTEL_INSTRUMENTATION_MCP_HEALTH_SESSION_IDLE_S,
                _options.positive,
                env.DEFAULT_SESSION_IDLE_S,
            ),
        )
        self._max_age_s = _options.require_positive(
            "catalog_max_age_s",
            _options.option(
                "catalog_max_age_s",
                catalog_max_age_s,
                env.OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S,
                _options.positive,
                DEFAULT_MAX_AGE_SECONDS,
            ),
        )
        self._supported = _options.supported_versions(
            supported_versions, DEFAULT_SUPPORTED_VERSIONS
        )
        self._max_pages = _options.max_pages(max_pages)
        self._lock = threading.Lock()
        self._sessions = SessionStore(
            max_sessions=sessions, idle_ns=int(idle_s * _NS_PER_S), max_pages=self._max_pages
        )
        self._incidents = Incidents()
        self._silent = SilentCalls()
        self._live_lock = threading.Lock()
        #: Open ``tools/call`` spans by span id, with their session key.
        self._live: dict[int, tuple[Span, str]] = {}
        self._shutdown = False
        self._metrics = HealthMetrics(meter_provider, self._in_flight_counts)

    def add_downstream(self, processor: SpanProcessor) -> None:
        """Own one more exporting processor (the tuple is replaced, never mutated in place)."""
        self._downstream = (*self._downstream, processor)

    # ------------------------------------------------------------------------------------------
    # SpanProcessor
    # ------------------------------------------------------------------------------------------
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Track in-flight ``tools/call`` spans for the live gauge, then forward."""
        if self._enabled:
            try:
                self._track(span)
            except Exception:
                _logger.debug("mcp_health: on_start failed", exc_info=True)
        for processor in self._downstream:
            processor.on_start(span, parent_context=parent_context)

    def _on_ending(self, span: Span) -> None:
        for processor in self._downstream:
            processor._on_ending(span)

    def on_end(self, span: ReadableSpan) -> None:
        """Forward an enriched copy of an MCP span (the original on any error of ours)."""
        forwarded = span
        if self._enabled and _spans.is_ours(span):
            try:
                forwarded = self._enrich(span)
            except Exception:
                _logger.debug("mcp_health: deriving verdicts failed", exc_info=True)
        for processor in self._downstream:
            processor.on_end(forwarded)

    def shutdown(self) -> None:
        """Shut every downstream processor down and forget all state (idempotent)."""
        if self._shutdown:
            _logger.debug("mcp_health: processor already shut down")
            return
        self._shutdown = True
        self._enabled = False
        for processor in self._downstream:
            processor.shutdown()
        with self._lock:
            self._sessions.clear()
            self._incidents.clear()
            self._silent.clear()
        with self._live_lock:
            self._live.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush every downstream processor within one shared deadline."""
        deadline = time.monotonic() + timeout_millis / 1000
        flushed = True
        for processor in self._downstream:
            remaining = max(0, int((deadline - time.monotonic()) * 1000))
            flushed = processor.force_flush(remaining) and flushed
        return flushed

    # ------------------------------------------------------------------------------------------
    # Live calls (the in-flight gauge)
    # ------------------------------------------------------------------------------------------
    def _track(self, span: Span) -> None:
        if not _spans.is_ours(span):
            return
        attrs = span.attributes or {}
        key = _spans.session_key(attrs)
        if key is None or _spans.method(attrs) != _TOOLS_CALL:
            return
        with self._live_lock:
            if len(self._live) < _MAX_LIVE:
                self._live[span.context.span_id] = (span, key)

    def _in_flight_counts(self) -> Mapping[LiveState, int]:
        now = time.time_ns()
        with self._live_lock:
            spans = [span for span, _ in self._live.values()]
        counts: Counter[LiveState] = Counter()
        for span in spans:
            try:
                counts[self._live_state(span, now)] += 1
            except Exception:
                _logger.debug("mcp_health: live state failed", exc_info=True)
        return counts

    @staticmethod
    def _live_state(span: Span, now: int) -> LiveState:
        attrs = span.attributes or {}
        if attrs.get(A.CALL_WAITING_FOR_USER) is True:
            return LiveState.WAITING_FOR_USER
        progress = _spans.progress_evidence(
            attrs, span.events, started_at=span.start_time, now=now, completed_at=None
        )
        return clocks(progress).live_state or LiveState.STALLED

    # ------------------------------------------------------------------------------------------
    # Verdicts
    # ------------------------------------------------------------------------------------------
    def _enrich(self, span: ReadableSpan) -> ReadableSpan:
        if span.context is not None:
            with self._live_lock:
                self._live.pop(span.context.span_id, None)
        attrs = dict(span.attributes or {})  # read once: lookups on SDK attributes are slow
        key = _spans.session_key(attrs)
        if key is None:
            return span
        now = span.end_time
        verdicts: dict[str, Any] = {}
        with self._lock:
            session = self._sessions.touch(key, now or 0)
            if span.name == A.SESSION_END_SPAN_NAME:
                session.closing = True
            else:
                session.server = _spans.server_identity(attrs, session.server)
                verdicts = self._judge(span, attrs, session)
            # A call span may end after its session (its end waits for an outcome receipt).
            if session.closing and not self._has_live_calls(key):
                self._sessions.release(key)
        if not verdicts and not _spans.carries_text(span):
            return span
        return _spans.enriched_copy(span, attrs, verdicts)

    def _has_live_calls(self, key: str) -> bool:
        with self._live_lock:
            return any(live_key == key for _, live_key in self._live.values())

    def _judge(
        self, span: ReadableSpan, attrs: Mapping[str, Any], session: Session
    ) -> dict[str, Any]:
        method = _spans.method(attrs)
        if method == _TOOLS_CALL:
            return self._judge_call(span, attrs, session)
        if method == _TOOLS_LIST:
            return self._judge_page(span, attrs, session)
        if method in _HANDSHAKES:
            return self._judge_handshake(span, attrs, session)
        if method == A.NOTIFICATION_SPAN_METHOD:
            if span.start_time is not None:
                session.add_signal(span.start_time)
            return self._judge_catalog(span, attrs, session, method)
        if span.name == A.RECONCILE_SPAN_NAME:
            return self._judge_reconciliation(span, attrs, session)
        if span.name == A.INSTALL_SPAN_NAME:
            session.set_install(
                attrs.get(A.CATALOG_CLIENT_DIGEST), attrs.get(A.CATALOG_DIGEST_ERROR)
            )
            return self._judge_catalog(span, attrs, session, A.INSTALL_SPAN_NAME)
        return {}

    def _server_labels(self, attrs: Mapping[str, Any], session: Session) -> dict[str, Any]:
        address = attrs.get(A.SERVER_ADDRESS)
        if isinstance(address, str):
            labels: dict[str, Any] = {A.SERVER_ADDRESS: address}
            port = attrs.get(A.SERVER_PORT)
            if isinstance(port, int):
                labels[A.SERVER_PORT] = port
            return labels
        return {A.SERVER_NAME: session.server or _UNKNOWN}

    def _judge_catalog(
        self, span: ReadableSpan, attrs: Mapping[str, Any], session: Session, kind: str
    ) -> dict[str, Any]:
        now = span.end_time
        result = classify_catalog(session.catalog(now, self._max_age_s))
        labels = {
            A.CATALOG_VERDICT: result.verdict.value,
            A.CATALOG_REASON: result.reason,
            A.MCP_METHOD_NAME: kind,
            **self._server_labels(attrs, session),
        }
        self._metrics.catalog_verdicts.add(1, labels)
        if (
            result.verdict is CatalogVerdict.CONVERGED
            and session.pending_signal is not None
            and now is not None
        ):
            lag = (now - session.pending_signal) / _NS_PER_S
            session.pending_signal = None
            self._metrics.convergence_lag.record(lag, self._server_labels(attrs, session))
        return _spans.catalog_attributes(result)

    def _judge_page(
        self, span: ReadableSpan, attrs: Mapping[str, Any], session: Session
    ) -> dict[str, Any]:
        if not _spans.is_application_page(attrs):
            return {}
        page = _spans.page(attrs)
        index = attrs.get(A.CATALOG_PAGE_INDEX)
        digest = attrs.get(A.CATALOG_DIGEST)
        error = attrs.get(A.CATALOG_DIGEST_ERROR)
        final = session.add_page(
            page,
            first=index == 0 or page.cursor is None,
            started_at=span.start_time,
            ended_at=span.end_time,
            digest=digest if isinstance(digest, str) else None,
            digest_error=error if isinstance(error, str) else None,
        )
        if not final:
            return {}
        return self._judge_catalog(span, attrs, session, _TOOLS_LIST)

    def _judge_handshake(
        self, span: ReadableSpan, attrs: Mapping[str, Any], session: Session
    ) -> dict[str, Any]:
        evidence = _spans.handshake_evidence(attrs, self._supported)
        result = classify_session(SessionEvidence(handshake=evidence)).call
        if result.rule == "handshake_failed":
            probe = (
                attrs.get(A.SESSION_ERA) == Era.DISCOVER.value
                and result.first_failed_layer is FirstFailedLayer.PROTOCOL
                and result.verdict is not Verdict.INCOMPATIBLE_SESSION
            )
            if probe:
                return {}  # the client falls back to ``initialize``: not a session failure
            if isinstance(evidence.authorization, AuthorizationEvidence) and (
                result.first_failed_layer is FirstFailedLayer.AUTHORIZATION
            ):
                session.auth_failure = evidence.authorization
        else:
            session.handshake = evidence
            if result.rule not in _HANDSHAKE_RULES:
                return {}
        verdicts: dict[str, Any] = {
            A.VERDICT: result.verdict.value,
            A.NEXT_ACTION: result.next_action.value,
            A.REASON: result.reason,
            A.CALL_FIRST_FAILED_LAYER: result.first_failed_layer.value,
        }
        self._open_incident(span, attrs, session, result=result, verdicts=verdicts)
        return verdicts

    def _judge_call(
        self, span: ReadableSpan, attrs: Mapping[str, Any], session: Session
    ) -> dict[str, Any]:
        if attrs.get(A.CALL_CANCELLED) is True and attrs.get(A.TRANSPORT_REQUEST_WRITTEN) is False:
            return {}  # cancelled before the request was written: no call (docs/model.md)
        call = _spans.call_evidence(attrs)
        if call.authorization is None and session.auth_failure is not None:
            # "no authorized exchange has succeeded since": the failure carries forward.
            call = replace(call, authorization=session.auth_failure)
        finding = _spans.tool_call_check(attrs)
        if finding is not None:
            session.add_finding(finding)
        now = span.end_time
        progress = _spans.progress_evidence(
            attrs, span.events, started_at=span.start_time, now=now, completed_at=now
        )
        outcome = classify_session(
            SessionEvidence(
                handshake=session.handshake,
                catalog=session.catalog(now, self._max_age_s),
                call=call,
                progress=progress,
            )
        )
        result = outcome.call
        verdicts = _spans.call_attributes(result)
        if outcome.catalog is not None:
            verdicts.update(_spans.catalog_attributes(outcome.catalog))
        if outcome.progress is not None and outcome.progress.count:
            verdicts.update(_spans.progress_attributes(outcome.progress))
        # Authorization memory: a failure holds until an authorized exchange succeeds.
        authorization = result.layers.get(Layer.AUTHORIZATION)
        if authorization is LayerStatus.FAILED and isinstance(
            call.authorization, AuthorizationEvidence
        ):
            session.auth_failure = call.authorization
        elif authorization is LayerStatus.PASSED:
            session.auth_failure = None
        # A silent call is remembered so that its reconciliation span can re-judge it.
        if result.effect_unknown and span.context is not None:
            silent = SilentCall(call, session.handshake, outcome.catalog_verdict)
            self._silent.remember(span.context.span_id, silent)
        tool = call.tool or ""
        labels = {
            A.VERDICT: result.verdict.value,
            A.CALL_FIRST_FAILED_LAYER: result.first_failed_layer.value,
            A.MCP_METHOD_NAME: _TOOLS_CALL,
            A.GEN_AI_TOOL_NAME: tool,
            **self._server_labels(attrs, session),
        }
        self._metrics.calls.add(1, labels)
        receipt = attrs.get(A.OUTCOME_RESULT)
        self._metrics.outcomes.add(
            1,
            {
                A.PROTOCOL_ENVELOPE: result.envelope,
                A.OUTCOME_RESULT: receipt if isinstance(receipt, str) else "none",
                A.OUTCOME_METHOD: str(attrs.get(A.OUTCOME_METHOD) or "none"),
                A.GEN_AI_TOOL_NAME: tool,
                **self._server_labels(attrs, session),
            },
        )
        self._open_incident(span, attrs, session, result=result, verdicts=verdicts)
        return verdicts

    def _judge_reconciliation(
        self, span: ReadableSpan, attrs: Mapping[str, Any], session: Session
    ) -> dict[str, Any]:
        """Re-judge the silent call the ``mcp_health.reconcile`` span links to (SPEC §5 rule 4).

        The silent call's evidence plus what reconciliation found (and the receipt, when a
        verifier judged the destination): effect absent → ``tool_failed`` with
        ``retry_within_budget``; effect present → the outcome decides (``healthy``,
        ``false_success``, ``unverified``). Without the silent call (evicted or not sampled) the
        span is forwarded with its evidence only. The call is judged in the session it ran in (its
        handshake and catalog verdict then), which may have closed since.
        """
        effect = _spans.effect_evidence(attrs)
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
        call = replace(silent.call, effect=effect, outcome=_spans.outcome_evidence(attrs))
        result = classify_session(
            SessionEvidence(
                handshake=silent.handshake, catalog_verdict=silent.catalog_verdict, call=call
            )
        ).call
        verdicts = _spans.call_attributes(result)
        self._open_incident(span, attrs, session, result=result, verdicts=verdicts)
        return verdicts

    def _open_incident(
        self,
        span: ReadableSpan,
        attrs: Mapping[str, Any],
        session: Session,
        *,
        result: CallResult,
        verdicts: dict[str, Any],
    ) -> None:
        """Key a non-green verdict as an incident; a healthy call clears its server's incidents."""
        verdict, layer = result.verdict, result.first_failed_layer
        server = session.server or _UNKNOWN
        if verdict is Verdict.HEALTHY:
            self._incidents.clear_server(server)
            return
        if verdict in _NO_INCIDENT:
            return
        service = span.resource.attributes.get(_SERVICE_NAME, _UNKNOWN)
        key = _spans.incident_key(str(service), server, layer.value, result.reason)
        verdicts[A.INCIDENT_KEY] = key
        attempt = self._incidents.open(key, server)
        verdicts[A.INCIDENT_ATTEMPT] = attempt
        if over_budget(verdict, layer, result.reason, attempt):
            verdicts[A.RETRY_OVER_BUDGET] = True
        if attempt == 1:
            self._metrics.incidents.add(
                1,
                {
                    A.VERDICT: verdict.value,
                    A.CALL_FIRST_FAILED_LAYER: layer.value,
                    **self._server_labels(attrs, session),
                },
            )


__all__ = ["McpHealthSpanProcessor"]
