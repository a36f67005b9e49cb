"""``McpHealthSpanProcessor``: verdicts on exported MCP spans, and the verdict metrics.

The instrumentation (:class:`otel_mcp_health.instrumentation.McpHealthInstrumentor`) records
small, safe *evidence* on the MCP client spans while they are open. This processor turns that
evidence into *verdicts* (docs/model.md) with the same pure classifiers that
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
contract, docs/model.md#verdicts), ``mcp_health.reason``, ``mcp_health.call.first_failed_layer``,
``mcp_health.call.reason``, one ``mcp_health.layer.<layer>`` per layer, the catalog verdict
(``mcp_health.catalog.verdict``/``reason``/``digest``/``client_digest``/``client_source``/
``max_age_s``; judged on the call's agent's model request when its span carries one, with
``overruled_source`` when that overruled a reported install), ``mcp_health.effect.unknown``
when a possible side effect is unreconciled,
``mcp_health.incident.key`` on every verdict other than ``healthy``, ``unverified`` and ``working``
(with ``mcp_health.incident.attempt`` and, beyond the failed layer's retry budget of
:mod:`otel_mcp_health.core.retries`, ``mcp_health.retry.over_budget``),
and the progress summary (``mcp_health.progress.*``). ``mcp_health.retry.unreconciled`` (a retry of
a side-effecting call after ``effect_unknown`` without reconciliation) is recorded by the
instrumentation, which correlates arguments in memory, and is forwarded as is.

On an ``mcp_health.reconcile`` span (what a destination query or idempotency-key lookup found,
linked to the silent call): the silent call judged again with that evidence (docs/model.md#silence),
e.g. ``tool_failed`` / ``retry_within_budget`` when the effect is confirmed absent.

On the page that ends a ``tools/list`` traversal (or fails it), on ``list_changed`` spans and on
``mcp_health.install`` spans: the catalog verdict, and the session's readiness without a call
(``mcp_health.readiness.*``, docs/model.md#without-a-call). On a failed handshake span
(``initialize`` / ``server/discover``): the verdict of its first failed layer
(``transport_error``, ``needs_auth``, ``protocol_error``, ``incompatible_session``) and the five
``mcp_health.layer.<layer>`` statuses of where it stopped; the verdict also on a handshake that
negotiated a version the client does not support. A ``server/discover`` probe that failed and
was followed by the session's fallback handshake is marked ``mcp_health.session.superseded`` by the
instrumentation: one connection attempt, judged once, on the handshake that superseded it
(docs/model.md#handshake).

Non-MCP spans (any span whose instrumentation scope is not ``otel_mcp_health.instrumentation``)
are forwarded as the very same object after one attribute comparison. If the processor's own code
fails on a span, the original span is forwarded unchanged and the error is logged at debug level;
the host never sees an exception from it.

Privacy: in the copy, a status description becomes the span's sanitized ``error.type``, and
exception events keep only ``exception.type``, whatever wrote them (docs/model.md#privacy).

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
the verifier's timeout). The other metrics are listed in :mod:`otel_mcp_health.processor.metrics`.

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
(:mod:`otel_mcp_health.processor._sessions`, whatever the number of pages; their size:
docs/performance.md, "The processor's state"). Verdicts come from the engine
(:mod:`otel_mcp_health.processor._engine`), behind its lock; ``on_end`` does no I/O beyond what
the downstream processor does.
"""

from __future__ import annotations

import functools
import logging
import operator
import time
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import SpanKind

from otel_mcp_health import _options, _sdkspan
from otel_mcp_health import attributes as A
from otel_mcp_health.core.vocabulary import NS_PER_S
from otel_mcp_health.processor import _inflight, _spans, _verdicts
from otel_mcp_health.processor._engine import Engine
from otel_mcp_health.processor._held import HeldCalls
from otel_mcp_health.processor._store import SessionStore
from otel_mcp_health.processor.metrics import HealthMetrics

_logger = logging.getLogger(__name__)
_CLIENT = SpanKind.CLIENT
_OURS = _spans.OURS
_FOREIGN_CLIENT = _spans.CLIENT
_OUTCOME_PENDING = A.OUTCOME_PENDING
_OUTCOME_SPAN = A.OUTCOME_SPAN_NAME


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
        options = _options.processor_options(
            enabled=enabled,
            max_sessions=max_sessions,
            session_idle_s=session_idle_s,
            catalog_max_age_s=catalog_max_age_s,
            supported_versions=supported_versions,
            max_pages=max_pages,
        )
        self._enabled = options.enabled
        self._inflight: _inflight.Live = {}  # open tools/call spans (``_inflight``: no lock needed)
        self._shutdown = False
        self._held = HeldCalls()
        self._engine = Engine(
            metrics=HealthMetrics(
                meter_provider, functools.partial(_inflight.in_flight_counts, self._inflight)
            ),
            store=SessionStore(
                max_sessions=options.max_sessions,
                idle_ns=int(options.session_idle_s * NS_PER_S),
                max_pages=options.max_pages,
            ),
            max_age_s=options.catalog_max_age_s,
            supported_versions=options.supported_versions,
            has_live_calls=self._session_has_calls,
        )

    def _session_has_calls(self, key: str) -> bool:
        """A closed session's facts stay while a call of it is open or held for its receipt."""
        return _inflight.has_calls(self._inflight, key) or self._held.has_calls(key)

    @property
    def _sessions(self) -> SessionStore:
        """The per-session state (tests look at its size)."""
        store: SessionStore = self._engine.sessions
        return store

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
                recognised = _spans.recognise(span)
                live = self._inflight
                if recognised == _OURS:
                    _inflight.track(live, span)
                elif (
                    recognised == _FOREIGN_CLIENT
                    and (context := _sdkspan.context(span)) is not None
                    and _inflight.room_for_foreign(live)
                ):
                    live[context.span_id] = (span, None)  # maybe borrowed: see ``_inflight``
            except Exception:
                _logger.debug("mcp_health: on_start failed", exc_info=True)
        for processor in self._downstream:
            try:
                processor.on_start(span, parent_context=parent_context)
            except Exception as error:  # noqa: BLE001 - host first: logged, never raised
                _downstream_raised(processor, "on_start", error)

    def _on_ending(self, span: Span) -> None:
        for processor in self._downstream:
            try:
                processor._on_ending(span)  # noqa: SLF001 - the SDK calls _on_ending on every span processor; we forward it
            except Exception as error:  # noqa: BLE001 - host first: logged, never raised
                _downstream_raised(processor, "_on_ending", error)

    def on_end(self, span: ReadableSpan) -> None:
        """Forward an enriched copy of an MCP span (the original on any error of ours)."""
        forwarded = span
        if self._enabled:
            try:  # every span ends here (`_spans.evidence` reads the SDK's spans in place)
                attrs = _spans.evidence(span)
                if attrs is not None:
                    judged = self._judged(span, attrs)
                    if judged is None:
                        return  # held for its receipt
                    forwarded = judged
                elif self._inflight and span.kind is _CLIENT and (ctx := span.context) is not None:
                    self._inflight.pop(ctx.span_id, None)  # tracked, never got our evidence
            except Exception:
                _logger.debug("mcp_health: on_end failed", exc_info=True)
        self._forward(forwarded)

    def _judged(self, span: ReadableSpan, attrs: Mapping[str, Any]) -> ReadableSpan | None:
        """The copy to forward (``None``: held until its receipt; the original on our error)."""
        try:
            receipt = None
            if _OUTCOME_PENDING in attrs:  # a receipt is coming (else nothing is held)
                held, receipt = self._held.call_ended(span, attrs)
                if held:
                    self._forget(span)  # forwarded with its receipt
                    return None
            forwarded = self._enrich(span, attrs, receipt)
            if span.name == _OUTCOME_SPAN:
                self._complete(span)
        except Exception:
            _logger.debug("mcp_health: deriving verdicts failed", exc_info=True)
            return span
        return forwarded

    def _forward(self, span: ReadableSpan) -> None:
        """End ``span`` in every downstream processor (one that raises does not hide it from the
        next)."""
        for processor in self._downstream:
            try:
                processor.on_end(span)
            except Exception as error:  # noqa: BLE001 - host first: logged, never raised
                _downstream_raised(processor, "on_end", error)

    def _complete(self, receipt: ReadableSpan) -> None:
        """Judge and forward the held call span this receipt completes (docs/model.md#layers)."""
        released = self._held.receipt_ended(receipt)
        if released is None:
            return
        call, extra = released
        self._forward(self._enrich(call, _sdkspan.attributes(call), extra))

    def _release_held(self) -> None:
        for call in self._held.drain():
            try:
                forwarded = self._enrich(call, _sdkspan.attributes(call))
            except Exception:
                _logger.debug("mcp_health: deriving verdicts failed", exc_info=True)
                forwarded = call
            self._forward(forwarded)

    def _forget(self, span: ReadableSpan) -> None:
        if (context := span.context) is not None:
            self._inflight.pop(context.span_id, None)

    def shutdown(self) -> None:
        """Shut every downstream processor down and forget all state (idempotent)."""
        if self._shutdown:
            _logger.debug("mcp_health: processor already shut down")
            return
        self._shutdown = True
        self._release_held()
        self._enabled = False
        for processor in self._downstream:
            processor.shutdown()
        self._engine.clear()
        self._inflight.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush every downstream processor within one shared deadline (held calls first)."""
        self._release_held()
        deadline = time.monotonic() + timeout_millis / 1000
        flushed = True
        for processor in self._downstream:
            remaining = max(0, int((deadline - time.monotonic()) * 1000))
            flushed = processor.force_flush(remaining) and flushed
        return flushed

    # ------------------------------------------------------------------------------------------
    # Verdicts
    # ------------------------------------------------------------------------------------------
    def _enrich(
        self,
        span: ReadableSpan,
        attrs: Mapping[str, Any],
        receipt: Mapping[str, Any] | None = None,
    ) -> ReadableSpan:
        """``attrs``: the span's attributes, read in place (never mutated)."""
        self._forget(span)
        if receipt is not None:
            merged = {**attrs, **receipt}
            merged.pop(A.OUTCOME_PENDING, None)
            attrs = merged
        key = _spans.session_key(attrs)
        if key is None:
            return span
        verdicts = self._engine.judge(span, attrs, key)
        if not verdicts and not _verdicts.carries_text(span):
            return span
        return _verdicts.enriched_copy(span, attrs, verdicts)


__all__ = ["McpHealthSpanProcessor"]

# Its ``on_start`` needs no attribute of a starting span (one of ours that starts without them is
# tracked until they are written: ``_inflight.track``), so spans may start without attributes
# where it is the looker, as far as the processors it owns allow.
_sdkspan.OWNERS[McpHealthSpanProcessor] = operator.attrgetter("_downstream")


def _downstream_raised(processor: SpanProcessor, method: str, error: Exception) -> None:
    # One raising downstream processor must not hide spans from the ones after it.
    _logger.warning(
        "mcp_health: downstream %s.%s raised %s",
        type(processor).__name__,
        method,
        type(error).__name__,
    )
