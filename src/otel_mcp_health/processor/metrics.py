"""The verdict metrics recorded by :class:`otel_mcp_health.McpHealthSpanProcessor`.

Every instrument name comes from :mod:`otel_mcp_health.attributes`, and every label is a
vocabulary value, a short reason code, a method or tool name, or a server identity, so the
cardinality is bounded by construction (no ids, no arguments, no free text).

=========================================  ===============  =======================================
instrument                                 kind / unit      labels
=========================================  ===============  =======================================
``mcp_health.calls``                       counter          ``mcp_health.verdict``,
                                           ``{call}``       ``mcp_health.call.first_failed_layer``,
                                                            ``mcp.method.name``,
                                                            ``gen_ai.tool.name``, server
``mcp_health.catalog.verdicts``            counter          ``mcp_health.catalog.verdict``,
                                           ``{verdict}``    ``mcp_health.catalog.reason``,
                                                            ``mcp.method.name``, server
``mcp_health.catalog.convergence_lag``     histogram        server: seconds from the first
                                           ``s``            ``list_changed`` signal to the next
                                                            ``converged`` catalog
``mcp_health.calls.in_flight``             gauge            ``mcp_health.live_state``
                                           ``{call}``       (``working``, ``stalled``,
                                                            ``waiting_for_user``)
``mcp_health.outcomes``                    counter          ``mcp_health.protocol.envelope``,
                                           ``{call}``       ``mcp_health.outcome.result``
                                                            (``passed``/``failed``/``inconclusive``/
                                                            ``none``), ``mcp_health.outcome.method``
                                                            (``not_required`` for the policy),
                                                            ``gen_ai.tool.name``, server
``mcp_health.incidents``                   counter          ``mcp_health.verdict``,
                                           ``{incident}``   ``mcp_health.call.first_failed_layer``,
                                                            server: incidents *opened*
``mcp_health.catalog.approvals``           counter          ``mcp_health.catalog.approval``
                                           ``{discovery}``  (``approved``/``drifted``/
                                                            ``unpinned``),
                                                            ``mcp_health.catalog.approval.reason``
                                                            (absent when approved), server: one
                                                            per complete discovery judged
                                                            against pins
=========================================  ===============  =======================================

Seed 003's two rates, live: protocol-level success =
``sum(outcomes{envelope=true}) / sum(outcomes)``; verified outcomes =
``sum(outcomes{result=passed, method!=not_required}) / sum(outcomes)``. A reconciliation span is
not counted again (its call was counted when it went silent).

Approval (docs/attributes.md#approved-catalogs): only the verdict and its reason code are labels;
the names of the tools that changed stay on the discovery span, and a tool's description, schema
or pin, and the pin file's path, are never a label. Both labels are vocabulary values: a
verdict outside it counts nothing, a reason outside it is left out.

"server" is the server's exported label: ``server.address``, ``server.port`` and
``mcp_health.server.name`` (the name it announced at the handshake), whichever its session has;
never a URL path or query, a command line or an environment (docs/model.md#server-identity: two
servers behind one host and port share a label, never an incident). Tool names and server labels
are server-chosen, so each is capped to 128 characters (prefix + digest) and takes
at most 1,000 distinct values per metric; later values fold into ``_overflow``
(:mod:`otel_mcp_health.core.bounds`).

The semconv histograms ``mcp.client.operation.duration`` and ``mcp.client.session.duration`` are
recorded by the instrumentation, which sees every request (sampled or not); the processor never
records them, so nothing is counted twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from opentelemetry.metrics import (
    CallbackOptions,
    Histogram,
    Meter,
    MeterProvider,
    Observation,
    get_meter,
)

from otel_mcp_health import attributes as A
from otel_mcp_health.core.bounds import LabelBudget
from otel_mcp_health.core.calls import CallResult
from otel_mcp_health.core.reasons import ApprovalReason
from otel_mcp_health.core.vocabulary import TOOLS_CALL, ApprovalVerdict, LiveState
from otel_mcp_health.version import __version__

#: Returns the number of in-flight ``tools/call`` spans per live state.
InFlightCounts = Callable[[], Mapping[LiveState, int]]


#: One label set's running sum: ``[labels as first seen (their order is kept), sum]``.
Cell = list[Any]
#: Labels whose values a server or the network chooses: capped, bounded in distinct values. The
#: common ones (:data:`A.OPEN_LABELS`) and the server name; the instrumentation's histograms add
#: ``error.type`` and the protocol version instead (``instrumentation._state.OPEN_LABELS``).
OPEN_LABELS = (*A.OPEN_LABELS, A.SERVER_NAME)
#: The approval counter's label values: vocabulary only (an application can write attributes on
#: the span too, so a value outside it is not trusted as a label).
_APPROVAL_VERDICTS: Final = frozenset(verdict.value for verdict in ApprovalVerdict)
_APPROVAL_REASONS: Final = frozenset(reason.value for reason in ApprovalReason)
#: The observable counters' units and descriptions (each summed by a :class:`_LocalCounter`).
_COUNTERS: Final = {
    A.METRIC_CALLS: ("{call}", "Tool calls by session-contract verdict and first failed layer."),
    A.METRIC_CATALOG_VERDICTS: (
        "{verdict}",
        "Catalog convergence verdicts on tools/list, list_changed and install spans.",
    ),
    A.METRIC_OUTCOMES: (
        "{call}",
        (
            "Tool calls by outcome receipt and by whether a result envelope arrived: "
            "protocol-level success against verified outcomes."
        ),
    ),
    A.METRIC_INCIDENTS: (
        "{incident}",
        "Incidents opened (one per service, server, failed layer and reason).",
    ),
    A.METRIC_CATALOG_APPROVALS: (
        "{discovery}",
        "Complete tool discoveries of pinned servers by approval (approved, drifted, unpinned).",
    ),
}


class _LocalCounter:
    """A monotonic counter summed here and reported through an observable counter.

    ``Counter.add`` of the SDK costs several microseconds per call; a dictionary increment costs a
    fraction of one. The exported values are the same cumulative sums (delta temporality is
    derived by the SDK). Open labels are bounded (docs/attributes.md#bounds).
    """

    __slots__ = ("_budget", "_counts", "_lock")

    def __init__(self, lock: threading.Lock) -> None:
        self._budget = LabelBudget(OPEN_LABELS)
        self._counts: dict[frozenset[tuple[str, Any]], Cell] = {}
        self._lock = lock  # shared by the processor's counters: one call counts in two at once

    def add(self, amount: int, labels: Mapping[str, Any]) -> None:
        """Count ``amount`` under ``labels``."""
        cell = self.cell(labels)
        with self._lock:
            cell[1] += amount

    def cell(self, labels: Mapping[str, Any]) -> Cell:
        """The running sum of ``labels``' bounded label set, to add to under the counter's lock
        (:meth:`HealthMetrics.count`).

        A cell may be kept and counted again without bounding the labels again: a label value,
        once admitted or folded into the overflow value, stays so.
        """
        bounded = self._budget.apply(labels)
        key = frozenset(bounded.items())
        with self._lock:
            entry = self._counts.get(key)
            if entry is None:
                entry = self._counts[key] = [bounded, 0]
            return entry

    def observe(self, _options: CallbackOptions) -> Iterable[Observation]:
        """The observable counter's callback: every label set's running sum."""
        with self._lock:
            counts = [(labels, value) for labels, value in self._counts.values()]
        # A cell is created just before its first count: one not counted yet is not reported.
        return [Observation(value, labels) for labels, value in counts if value]


class _BoundedHistogram:
    """A histogram whose open labels are bounded (docs/attributes.md#bounds)."""

    __slots__ = ("_budget", "_histogram")

    def __init__(self, histogram: Histogram) -> None:
        self._histogram = histogram
        self._budget = LabelBudget(OPEN_LABELS)

    def record(self, value: float, labels: Mapping[str, Any]) -> None:
        """``Histogram.record`` with bounded labels."""
        self._histogram.record(value, self._budget.apply(labels))


class HealthMetrics:
    """The processor's instruments, created once from one meter."""

    def __init__(self, meter_provider: MeterProvider | None, in_flight: InFlightCounts) -> None:
        meter = get_meter(__name__, __version__, meter_provider)
        self._in_flight = in_flight
        self._lock = threading.Lock()
        self.calls = self._counter(meter, A.METRIC_CALLS)
        self.catalog_verdicts = self._counter(meter, A.METRIC_CATALOG_VERDICTS)
        self.convergence_lag = _BoundedHistogram(
            meter.create_histogram(
                A.METRIC_CONVERGENCE_LAG,
                unit="s",
                description="Time from a tools/list_changed signal to the next converged catalog.",
                explicit_bucket_boundaries_advisory=[float(b) for b in A.DURATION_BUCKETS],
            )
        )
        self.outcomes = self._counter(meter, A.METRIC_OUTCOMES)
        self.incidents = self._counter(meter, A.METRIC_INCIDENTS)
        self.catalog_approvals = self._counter(meter, A.METRIC_CATALOG_APPROVALS)
        self.in_flight_gauge = meter.create_observable_gauge(
            A.METRIC_CALLS_IN_FLIGHT,
            callbacks=[self._observe_in_flight],
            unit="{call}",
            description="In-flight tool calls by live state (working, stalled, waiting_for_user).",
        )

    def _counter(self, meter: Meter, name: str) -> _LocalCounter:
        """A counter summed here (under the shared lock), reported as the observable counter
        ``name`` (unit and description from :data:`_COUNTERS`)."""
        counter = _LocalCounter(self._lock)
        unit, description = _COUNTERS[name]
        meter.create_observable_counter(
            name, callbacks=[counter.observe], unit=unit, description=description
        )
        return counter

    def call_cells(
        self,
        result: CallResult,
        *,
        tool: str,
        receipt: str,
        method: str,
        server: Mapping[str, Any],
    ) -> tuple[Cell, Cell]:
        """The cells a judged ``tools/call`` counts in (kept by the engine per judgement)."""
        verdict = {
            A.VERDICT: result.verdict.value,
            A.CALL_FIRST_FAILED_LAYER: result.first_failed_layer.value,
            A.MCP_METHOD_NAME: TOOLS_CALL,
        }
        outcome = {
            A.PROTOCOL_ENVELOPE: result.envelope,
            A.OUTCOME_RESULT: receipt,
            A.OUTCOME_METHOD: method,
        }
        return (
            self.calls.cell({**verdict, A.GEN_AI_TOOL_NAME: tool, **server}),
            self.outcomes.cell({**outcome, A.GEN_AI_TOOL_NAME: tool, **server}),
        )

    def count(self, cells: tuple[Cell, Cell]) -> None:
        """Count one call in the cells of :meth:`call_cells`."""
        calls, outcomes = cells
        with self._lock:  # the lock of both counters
            calls[1] += 1
            outcomes[1] += 1

    def count_approval(self, attrs: Mapping[str, Any], server: Mapping[str, Any]) -> None:
        """Count one complete discovery judged against pins, from the attributes of the span
        that completed it (``mcp_health.catalog.approval`` and its reason), under ``server``'s
        label. A span without an approval (no pins configured, not a discovery's last page)
        counts nothing."""
        approval = attrs.get(A.CATALOG_APPROVAL)
        if approval not in _APPROVAL_VERDICTS:
            return
        labels = {A.CATALOG_APPROVAL: approval, **server}
        reason = attrs.get(A.CATALOG_APPROVAL_REASON)
        if reason in _APPROVAL_REASONS:
            labels[A.CATALOG_APPROVAL_REASON] = reason
        self.catalog_approvals.add(1, labels)

    def _observe_in_flight(self, _options: CallbackOptions) -> Iterable[Observation]:
        counts = self._in_flight()
        return [
            Observation(counts.get(state, 0), {A.LIVE_STATE: state.value}) for state in LiveState
        ]
