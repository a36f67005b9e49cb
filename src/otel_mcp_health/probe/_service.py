"""The prober: configured targets only, one probe per target per minimum interval, bounded.

* Only a target named in the file can be probed, only with a module named in the file
  (:class:`UnknownTargetError`, :class:`UnknownModuleError`): the prober never relays a
  request anywhere else.
* A target's result is kept for ``min_interval``: scrapes inside it are answered from the cache,
  and scrapes that arrive while a probe of that target is running wait for that probe (one probe,
  however many scrapers).
* At most ``max_concurrent`` probes run at once; a probe that cannot start within its bound is
  :class:`ProberBusyError`.
* The handshake era a target answered in is remembered for :data:`ERA_MEMORY_S`: an older
  server is then probed with ``initialize`` alone, without a refused ``server/discover`` first.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry.sdk.trace import ReadableSpan

from otel_mcp_health import OutcomePolicy
from otel_mcp_health import attributes as A
from otel_mcp_health.clientside.command_line import CheckOptions
from otel_mcp_health.probe import _one_probe, _render
from otel_mcp_health.probe._config import Module, ProbeConfig, ProbeTarget
from otel_mcp_health.probe._pipeline import ProbePipeline
from otel_mcp_health.probe._stats import ProberStats

#: Time past a probe's bound its answer waits for the session's cleanup to finish.
ANSWER_GRACE_S: Final = 0.25
#: Longest wait on exit for a probe's cleanup (the SDK's stdio kill escalation takes < 7 s).
CLOSE_WAIT_S: Final = 10.0
#: How long the era a target answered in is trusted before ``auto`` asks again.
ERA_MEMORY_S: Final = 3600.0
#: Attributes of a probe's root span (its trace holds the product's judged spans).
PROBE_SPAN_NAME: Final = A.PROBE_SPAN_NAME
PROBE_TARGET: Final = A.PROBE_TARGET
PROBE_MODULE: Final = A.PROBE_MODULE


class UnknownTargetError(LookupError):
    """A target that is not in the configuration file."""


class UnknownModuleError(LookupError):
    """A module that is not in the configuration file."""


class ProberBusyError(RuntimeError):
    """No probe slot (or the running probe of this target) freed up within the bound."""


@dataclass(frozen=True)
class ProbeResult:
    """One probe's report (the check's JSON report), with what the prober adds."""

    target: str
    module: str
    report: dict[str, Any]
    run: _one_probe.Run
    finished: float  # time.monotonic() when it ended
    duration_s: float
    cached: bool = False
    #: The bound this probe had: a scraper allowing more is not answered from it (a probe cut
    #: short by one scraper's short timeout must not become every scraper's answer).
    bound_s: float = float("inf")

    @property
    def success(self) -> bool:
        """Whether the probe's verdict is healthy (with a call) or converged (without one)."""
        return bool(self.report["success"])

    def samples(self, now: float) -> list[_render.Sample]:
        """This result's samples (``now``: ``time.monotonic()``, for the age)."""
        return _render.samples(
            self.report,
            duration_s=self.duration_s,
            phases=self.run.phases,
            requests=self.run.requests,
            approval=self.report.get("approval"),
            cached=self.cached,
            age_s=max(now - self.finished, 0.0),
        )


@dataclass
class _Job:
    """One probe's inputs, and what its worker thread leaves for the answer."""

    options: CheckOptions
    era_mode: str | None
    run: _one_probe.Run = field(default_factory=_one_probe.Run)
    traced: list[int] = field(default_factory=list)
    spans: list[tuple[ReadableSpan, ...]] = field(default_factory=list)


@dataclass
class _Slot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    result: ProbeResult | None = None


class ProbeService:
    """Probes the configured targets through the product's own instrumentation and processor."""

    def __init__(self, config: ProbeConfig, pipeline: ProbePipeline | None = None) -> None:
        self.config = config
        self.stats = ProberStats()
        self._policy = _canary_policy(config)  # read before anything is instrumented
        self.pipeline = pipeline or ProbePipeline(otlp=False, approved_catalog=config.pins)
        if self._policy is not None:
            # After instrumenting: it replaces OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES's policy,
            # as ``check --outcomes`` does.
            self._policy.install()
        self._running = threading.BoundedSemaphore(config.max_concurrent)
        self._lock = threading.Lock()
        self._slots: dict[tuple[str, str], _Slot] = {}
        self._eras: dict[str, tuple[str, float]] = {}
        self._workers: set[threading.Thread] = set()
        self.latest: dict[tuple[str, str], ProbeResult] = {}

    def resolve(self, target: str | None, module: str | None) -> tuple[ProbeTarget, Module]:
        """The configured target and module (raises :class:`UnknownTargetError` or
        :class:`UnknownModuleError`)."""
        found = self.config.targets.get(target or "")
        if found is None:
            raise UnknownTargetError
        chosen = self.config.modules.get(module or found.module)
        if chosen is None:
            raise UnknownModuleError
        return found, chosen

    def probe(
        self, target: str | None, module: str | None = None, *, timeout_s: float | None = None
    ) -> ProbeResult:
        """One probe of a configured target, or its cached result (see the module docstring)."""
        found, chosen = self.resolve(target, module)
        bound = min(chosen.timeout_s, timeout_s) if timeout_s is not None else chosen.timeout_s
        deadline = time.monotonic() + bound
        slot = self._slot((found.name, chosen.name))
        if not slot.lock.acquire(timeout=bound):
            raise ProberBusyError
        try:
            cached = slot.result
            if (
                cached is not None
                and time.monotonic() - cached.finished < self.config.min_interval_s
                and cached.bound_s >= bound
            ):
                self.stats.scraped(found.name, chosen.name, cached=True)
                return dataclasses.replace(cached, cached=True)
            if not self._running.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
                raise ProberBusyError
            # What is left of the bound after waiting for the target and for a slot. The probe
            # owns the running slot until its cleanup ends (see _probe).
            result = self._probe(found, chosen, max(deadline - time.monotonic(), 0.1))
            result = dataclasses.replace(result, bound_s=bound)
            slot.result = result
            self.latest[(found.name, chosen.name)] = result
            self.stats.scraped(found.name, chosen.name, cached=False)
            self.stats.probed(found.name, chosen.name, success=result.success)
            return result
        finally:
            slot.lock.release()

    def _slot(self, key: tuple[str, str]) -> _Slot:
        with self._lock:
            return self._slots.setdefault(key, _Slot())

    def _era_mode(self, target: ProbeTarget, module: Module) -> str | None:
        if module.era != "auto":
            return None
        learned = self._eras.get(target.name)
        if learned is None or time.monotonic() - learned[1] > ERA_MEMORY_S:
            return None
        return learned[0]

    def _learn_era(self, target: ProbeTarget, module: Module, run: _one_probe.Run) -> None:
        if module.era != "auto":
            return
        if run.era == "initialize":
            self._eras[target.name] = ("legacy", time.monotonic())
        elif not run.facts.connected:
            self._eras.pop(target.name, None)  # ask again next time: it may have been upgraded

    def _probe(self, target: ProbeTarget, module: Module, timeout_s: float) -> ProbeResult:
        """One probe on a worker thread, answered within ``timeout_s`` (+ a moment) even when
        closing the session takes longer (the SDK waits out a stdio server that ignores stdin's
        end and SIGTERM for seconds): then the answer is the probe as it stood, timed out, and
        the worker keeps its running slot until its cleanup ends."""
        job = _Job(
            _one_probe.check_options(target, module, timeout_s), self._era_mode(target, module)
        )
        started = time.monotonic()
        worker = threading.Thread(
            target=self._work, args=(target, module, job), name=f"probe-{target.name}", daemon=True
        )
        self._workers.add(worker)
        try:
            worker.start()
        except BaseException:
            self._workers.discard(worker)
            self._running.release()
            raise
        worker.join(timeout_s + ANSWER_GRACE_S)
        run = job.run
        if worker.is_alive():
            found = self.pipeline.router.close(job.traced[0]) if job.traced else ()
            run = _timed_out(run)
        else:
            found = job.spans[0] if job.spans else ()
            self._learn_era(target, module, run)
        return ProbeResult(
            target=target.name,
            module=module.name,
            report=_one_probe.report(found, run, job.options),
            run=run,
            finished=time.monotonic(),
            duration_s=time.monotonic() - started,
        )

    def _work(self, target: ProbeTarget, module: Module, job: _Job) -> None:
        """The probe itself, under its root span (worker thread); frees the running slot."""
        attributes = {PROBE_TARGET: target.name, PROBE_MODULE: module.name}
        self.stats.in_flight(+1)
        try:
            with self.pipeline.tracer.start_as_current_span(
                PROBE_SPAN_NAME, attributes=attributes
            ) as root:
                job.traced.append(root.get_span_context().trace_id)
                self.pipeline.router.open(job.traced[0])
                _one_probe.drive(target, job.options, job.era_mode, run=job.run)
            job.spans.append(self.pipeline.router.close(job.traced[0]))
        finally:
            self.stats.in_flight(-1)
            self._running.release()
            self._workers.discard(threading.current_thread())

    def close(self) -> None:
        """Wait for the probes still closing their sessions (a stdio server left behind would
        outlive the prober), then stop the pipeline and forget the canary policy."""
        for worker in list(self._workers):
            worker.join(CLOSE_WAIT_S)
        self.pipeline.shutdown()
        if self._policy is not None:
            self._policy.uninstall()


def _timed_out(run: _one_probe.Run) -> _one_probe.Run:
    """A copy of a probe still running past its bound, marked timed out."""
    late = dataclasses.replace(run.facts, timed_out=True)
    return _one_probe.Run(facts=late, phases=dict(run.phases), requests=Counter(run.requests))


def _canary_policy(config: ProbeConfig) -> OutcomePolicy | None:
    """The outcome policy of every canary: ``[probe].outcomes`` first, then one
    ``not_required`` entry per canary that declares it (the first matching entry decides)."""
    import glob

    entries = [
        {"tool": glob.escape(t.canary.tool), "verify": "not_required"}
        for t in config.targets.values()
        if t.canary is not None and t.canary.verify == "not_required"
    ]
    base = OutcomePolicy.load(config.outcomes) if config.outcomes is not None else None
    if base is None and not entries:
        return None
    extra = OutcomePolicy.from_entries(entries, config.source) if entries else None
    combined = (base.entries if base else ()) + (extra.entries if extra else ())
    return OutcomePolicy(base.source if base else config.source, combined)
