"""The verdict metrics recorded by :class:`otel_mcp_health.McpHealthSpanProcessor`.

Every instrument name comes from :mod:`otel_mcp_health.attributes`, and every label is a
vocabulary value, a short reason code, a method or tool name, or a server identity, so the
cardinality is bounded by construction (no ids, no arguments, no free text).

=========================================  ==============  =======================================
instrument                                 kind / unit     labels
=========================================  ==============  =======================================
``mcp_health.calls``                       counter         ``mcp_health.verdict``,
                                           ``{call}``      ``mcp_health.call.first_failed_layer``,
                                                           ``mcp.method.name``,
                                                           ``gen_ai.tool.name``, server
``mcp_health.catalog.verdicts``            counter         ``mcp_health.catalog.verdict``,
                                           ``{verdict}``   ``mcp_health.catalog.reason``,
                                                           ``mcp.method.name``, server
``mcp_health.catalog.convergence_lag``     histogram       server: seconds from the first
                                           ``s``           ``list_changed`` signal to the next
                                                           ``converged`` catalog
``mcp_health.calls.in_flight``             gauge           ``mcp_health.live_state``
                                           ``{call}``      (``working``, ``stalled``,
                                                           ``waiting_for_user``)
``mcp_health.outcomes``                    counter         ``mcp_health.protocol.envelope``,
                                           ``{call}``      ``mcp_health.outcome.result``
                                                           (``passed``/``failed``/``inconclusive``/
                                                           ``none``), ``mcp_health.outcome.method``
                                                           (``not_required`` for the policy),
                                                           ``gen_ai.tool.name``, server
``mcp_health.incidents``                   counter         ``mcp_health.verdict``,
                                           ``{incident}``  ``mcp_health.call.first_failed_layer``,
                                                           server: incidents *opened* (SPEC §6)
=========================================  ==============  =======================================

Seed 003's two rates, live: protocol-level success =
``sum(outcomes{envelope=true}) / sum(outcomes)``; verified outcomes =
``sum(outcomes{result=passed, method!=not_required}) / sum(outcomes)``. A reconciliation span is
not counted again (its call was counted when it went silent).

"server" is ``server.address`` (+ ``server.port``) for a network server and
``mcp_health.server.name`` (the name it announced at the handshake) otherwise.

The semconv histograms ``mcp.client.operation.duration`` and ``mcp.client.session.duration`` are
recorded by the instrumentation, which sees every request (sampled or not); the processor never
records them, so nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from opentelemetry.metrics import (
    CallbackOptions,
    MeterProvider,
    Observation,
    get_meter,
)

from otel_mcp_health import attributes as A
from otel_mcp_health.core.vocabulary import LiveState
from otel_mcp_health.version import __version__

#: Returns the number of in-flight ``tools/call`` spans per live state.
InFlightCounts = Callable[[], Mapping[LiveState, int]]


class HealthMetrics:
    """The processor's instruments, created once from one meter."""

    def __init__(self, meter_provider: MeterProvider | None, in_flight: InFlightCounts) -> None:
        meter = get_meter(__name__, __version__, meter_provider)
        self._in_flight = in_flight
        self.calls = meter.create_counter(
            A.METRIC_CALLS,
            unit="{call}",
            description="Tool calls by session-contract verdict and first failed layer.",
        )
        self.catalog_verdicts = meter.create_counter(
            A.METRIC_CATALOG_VERDICTS,
            unit="{verdict}",
            description="Catalog convergence verdicts on tools/list, list_changed and install "
            "spans.",
        )
        self.convergence_lag = meter.create_histogram(
            A.METRIC_CONVERGENCE_LAG,
            unit="s",
            description="Time from a tools/list_changed signal to the next converged catalog.",
            explicit_bucket_boundaries_advisory=[float(b) for b in A.DURATION_BUCKETS],
        )
        self.outcomes = meter.create_counter(
            A.METRIC_OUTCOMES,
            unit="{call}",
            description="Tool calls by outcome receipt and by whether a result envelope arrived: "
            "protocol-level success against verified outcomes.",
        )
        self.incidents = meter.create_counter(
            A.METRIC_INCIDENTS,
            unit="{incident}",
            description="Incidents opened (one per service, server, failed layer and reason).",
        )
        self.in_flight_gauge = meter.create_observable_gauge(
            A.METRIC_CALLS_IN_FLIGHT,
            callbacks=[self._observe_in_flight],
            unit="{call}",
            description="In-flight tool calls by live state (working, stalled, waiting_for_user).",
        )

    def _observe_in_flight(self, _options: CallbackOptions) -> Iterable[Observation]:
        counts = self._in_flight()
        return [
            Observation(counts.get(state, 0), {A.LIVE_STATE: state.value}) for state in LiveState
        ]
