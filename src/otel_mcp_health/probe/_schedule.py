"""Scheduled mode: every target on its interval, results exported over OTLP.

Traces: each probe is one trace, its root span ``mcp_health.probe`` and, below it, the product's
own judged spans (handshake, each ``tools/list`` page, the canary call), exported by the
pipeline's OTLP span exporter. Metrics: the processor's own families, and the ``/probe`` families
as observable gauges of each target's latest result, with the target and module as attributes
(``mcp_health.probe.target``, ``mcp_health.probe.module``). Both use the standard
``OTEL_EXPORTER_OTLP_*`` variables.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence

from opentelemetry.metrics import CallbackOptions, Meter, Observation
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader

from otel_mcp_health import attributes as A
from otel_mcp_health.probe._render import FAMILIES, Sample
from otel_mcp_health.probe._service import PROBE_MODULE, PROBE_TARGET, ProberBusyError, ProbeService

#: Units of the families whose name states one (the Prometheus translation then keeps the name).
_UNITS = {A.METRIC_PROBE_DURATION: "s", A.METRIC_PROBE_PHASE_DURATION: "s"}


def otlp_metric_readers() -> Sequence[MetricReader]:
    """One periodic OTLP metric reader (``OTEL_EXPORTER_OTLP_*``,
    ``OTEL_METRIC_EXPORT_INTERVAL``)."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return (PeriodicExportingMetricReader(OTLPMetricExporter()),)


def register_gauges(meter: Meter, service: ProbeService) -> None:
    """Observable gauges, one per ``/probe`` family, reading every target's latest result."""

    def observe(name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def callback(_options: CallbackOptions) -> Iterable[Observation]:
            now = time.monotonic()
            found: list[Observation] = []
            for result in list(service.latest.values()):
                extra = {PROBE_TARGET: result.target, PROBE_MODULE: result.module}
                found += [
                    Observation(s.value, {**s.labels, **extra})
                    for s in result.samples(now)
                    if s.name == name
                ]
            return found

        return callback

    for name, _kind, help_text in FAMILIES:
        meter.create_observable_gauge(
            name, callbacks=[observe(name)], unit=_UNITS.get(name, ""), description=help_text
        )


class Scheduler:
    """Probes every target on its interval, on one thread per target, until stopped."""

    def __init__(self, service: ProbeService) -> None:
        self._service = service
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for target in self._service.config.targets.values():
            thread = threading.Thread(
                target=self._loop, args=(target.name, target.interval_s), daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _loop(self, name: str, interval_s: float) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self._service.probe(name)
            except ProberBusyError:
                pass  # the next interval tries again
            except Exception as exc:  # noqa: BLE001 - a fault of ours must not end the schedule
                self._service.stats.fault(exc)
            self._stop.wait(max(interval_s - (time.monotonic() - started), 0.0))

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)


def samples_of(service: ProbeService) -> list[Sample]:
    """Every target's latest samples (for tests of scheduled mode without a collector)."""
    now = time.monotonic()
    return [s for result in list(service.latest.values()) for s in result.samples(now)]
