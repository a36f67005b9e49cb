"""The prober's own metrics (``/metrics``): probes run, scrapes answered, requests refused.

Labels are configured target and module names (never a value a scraper sent: a refused request is
counted by its reason only), so their number is bounded by the configuration file.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Final

from otel_mcp_health import attributes as A
from otel_mcp_health.probe._render import Sample, exposition

PROBE_TARGET_LABEL: Final = A.PROBE_TARGET
PROBE_MODULE_LABEL: Final = A.PROBE_MODULE
FAMILIES: Final = (
    (A.METRIC_PROBER_PROBES, "counter", "Probes run, by target, module and result."),
    (
        A.METRIC_PROBER_SCRAPES,
        "counter",
        "Probe requests answered, by target, module and whether from the cache.",
    ),
    (A.METRIC_PROBER_REFUSED, "counter", "Probe requests refused, by reason."),
    (A.METRIC_PROBER_IN_FLIGHT, "gauge", "Probes running now."),
)
#: Reasons of a refused ``/probe`` request (``internal_error``: a fault of the prober's own).
REFUSALS: Final = ("unknown_target", "unknown_module", "bad_request", "busy", "internal_error")
_logger = logging.getLogger(__name__)


class ProberStats:
    """Counters of the prober, summed under one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._probes: Counter[tuple[str, str, str]] = Counter()
        self._scrapes: Counter[tuple[str, str, str]] = Counter()
        self._refused: Counter[str] = Counter(dict.fromkeys(REFUSALS, 0))
        self._in_flight = 0
        self._faults: set[str] = set()

    def probed(self, target: str, module: str, *, success: bool) -> None:
        with self._lock:
            self._probes[(target, module, "success" if success else "failure")] += 1

    def scraped(self, target: str, module: str, *, cached: bool) -> None:
        with self._lock:
            self._scrapes[(target, module, "true" if cached else "false")] += 1

    def refused(self, reason: str) -> None:
        with self._lock:
            self._refused[reason] += 1

    def fault(self, exc: BaseException) -> None:
        """A fault of the prober's own: one warning per exception class, naming the class only
        (its message may quote a target's answer)."""
        name = type(exc).__name__
        with self._lock:
            first = name not in self._faults
            self._faults.add(name)
        if first:
            _logger.warning("otel-mcp-health probe: internal error %s (reported once)", name)

    def in_flight(self, delta: int) -> None:
        with self._lock:
            self._in_flight += delta

    def probes(self, target: str, module: str) -> int:
        """Probes run for ``target`` with ``module`` (any result)."""
        with self._lock:
            return sum(n for (t, m, _r), n in self._probes.items() if (t, m) == (target, module))

    def render(self) -> str:
        """The Prometheus text of ``/metrics``."""
        with self._lock:
            found = [
                Sample(
                    A.METRIC_PROBER_PROBES,
                    {PROBE_TARGET_LABEL: t, PROBE_MODULE_LABEL: m, "result": r},
                    n,
                )
                for (t, m, r), n in sorted(self._probes.items())
            ]
            found += [
                Sample(
                    A.METRIC_PROBER_SCRAPES,
                    {PROBE_TARGET_LABEL: t, PROBE_MODULE_LABEL: m, "cached": c},
                    n,
                )
                for (t, m, c), n in sorted(self._scrapes.items())
            ]
            found += [
                Sample(A.METRIC_PROBER_REFUSED, {"reason": reason}, n)
                for reason, n in sorted(self._refused.items())
            ]
            found.append(Sample(A.METRIC_PROBER_IN_FLIGHT, {}, self._in_flight))
        return exposition(found, FAMILIES)
