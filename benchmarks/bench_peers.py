"""Benchmark: otel-mcp-health next to its peers, Traceloop, OpenLIT and Logfire, on ``mcp`` 1.30
and 2.3, each against a baseline measured in the same run.

Run ``python benchmarks/bench_peers.py`` (``make bench`` runs it; it never runs under ``make
test``, and the peers' pins never touch ``.venv``). Each configuration (:data:`CONFIGS`) lives in
its own venv under ``~/.cache/otel-mcp-health-bench/<name>`` (``BENCH_PEERS_CACHE`` moves it),
made with ``python -m venv`` and ``pip install`` from :func:`requirements`, and re-used while its
stamp file matches the pins (for ours, also the hash of ``pyproject.toml``; our package is an
editable install of this checkout, so code changes need no rebuild). Every venv gets the same
OpenTelemetry release (:data:`OTEL`: without it pip backtracks through OpenLIT's fourteen
contrib instrumentations for minutes). The peers' versions have one home, :data:`PEERS`.

The configurations: on ``mcp`` 1.30, the baseline (an SDK ``TracerProvider``, no
instrumentation: the 1.x SDK makes no span), ours (``McpHealthInstrumentor`` +
``McpHealthSpanProcessor``), Traceloop (``McpInstrumentor().instrument()``, its defaults: it
records arguments and results), OpenLIT (``openlit.init()`` reusing the SDK provider, its MCP
instrumentor only, metrics and events off, a local empty price list) and Logfire
(``logfire.configure(send_to_logfire=False, console=False, metrics=False)`` with the same local
exporter, then ``logfire.instrument_mcp()``); on ``mcp`` 2.3, the baseline (the SDK's own
tracing: 2.x makes its client and server spans when a TracerProvider is set), ours, OpenLIT,
Traceloop and Logfire. Every span goes through a ``SimpleSpanProcessor`` to an exporter that does
nothing (to an ``InMemorySpanExporter`` in the probe). A configuration that cannot be installed,
cannot instrument, or makes exactly the baseline's spans is reported as such and not timed.

Method: ``_peers/child.py`` runs one configuration in one fresh process and prints JSON. First a
probe per configuration: after 3 warm-up calls, 10 calls, counting the spans that end during them
(spans per call, attributes per span, their names, whether the call's argument or the tool's
answer appears on any span). Then :data:`ROUNDS` rounds; each round starts one child per timed
configuration, in a rotated order (drift and load hit all alike). A child opens an in-process
session (the SDK's low-level server in the same process: its CPU is counted) and a streamable HTTP
session to a server on 127.0.0.1 (one uninstrumented server per SDK line, for the whole run, in
the baseline's venv: only the client's CPU is counted), lists the tools, makes :data:`WARMUP`
calls, then :data:`CALLS` calls of a trivial tool in :data:`SLICES` slices after a full garbage
collection: CPU per call is the least disturbed slice (a shared machine only ever adds time),
latency the median call. Ratios are the median over rounds of each round's ratio to the baseline
of the same SDK line in the same round, with their range. Last, ours against :data:`TARGETS`.
Results: ``benchmarks/.results/peers.md``. ``BENCH_PEERS_ROUNDS`` sets the rounds (0 times
nothing), ``BENCH_PEERS_ONLY=ours,traceloop`` times those kinds only (with the baselines).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from _common import HERE, ROOT, Report, median, ratio, ratio_value, stop_child
from _peers import venvs

#: The peers, one home for their versions (the newest that install on Python 3.11 today).
PEERS = {
    "traceloop": ("opentelemetry-instrumentation-mcp==0.62.4",),
    "openlit": ("openlit==1.45.0",),
    "logfire": ("logfire==5.4.0",),
}
#: The SDK lines.
MCP = {"1.30": "mcp==1.30.0", "2.3": "mcp==2.3.0"}
#: One OpenTelemetry release for every venv (pip constraints).
OTEL = (
    "opentelemetry-api==1.45.1",
    "opentelemetry-sdk==1.45.1",
    "opentelemetry-proto==1.45.1",
    "opentelemetry-exporter-otlp==1.45.1",
    "opentelemetry-exporter-otlp-proto-common==1.45.1",
    "opentelemetry-exporter-otlp-proto-grpc==1.45.1",
    "opentelemetry-exporter-otlp-proto-http==1.45.1",
    "opentelemetry-instrumentation==0.66b1",
    "opentelemetry-semantic-conventions==0.66b1",
    "opentelemetry-util-http==0.66b1",
)
ROUNDS = int(os.environ.get("BENCH_PEERS_ROUNDS", "8"))
#: ``BENCH_PEERS_ONLY=ours,traceloop``: time these kinds only (the baselines always run).
ONLY = {kind for kind in os.environ.get("BENCH_PEERS_ONLY", "").split(",") if kind}
#: Ours against the targets: (SDK line, transport, measure, limit). A limit is at most that
#: many times the same round's baseline, except the 1.30 in-process CPU: what ours adds to the
#: baseline is at most what Traceloop adds in the same round (``TRACELOOP_ADDS``).
TRACELOOP_ADDS = "added ≤ Traceloop's added"
TARGETS = (
    ("1.30", "in-process", "cpu_us", TRACELOOP_ADDS),
    ("1.30", "http", "latency_us", 1.05),
    ("2.3", "in-process", "cpu_us", 1.15),
    ("2.3", "http", "latency_us", 1.03),
)
CALLS = {"in-process": 200, "http": 100}
WARMUP = 20
SLICES = 5
CHILD = HERE / "_peers" / "child.py"
CHILD_TIMEOUT = 180


@dataclass(frozen=True)
class Config:
    kind: str  # baseline, ours, or a key of PEERS
    line: str  # a key of MCP
    label: str

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.line}"

    @property
    def python(self) -> pathlib.Path:
        return venvs.python(self.name)


CONFIGS = (
    Config("baseline", "1.30", "baseline: a TracerProvider, no instrumentation"),
    Config("ours", "1.30", "otel-mcp-health (instrumentation + processor)"),
    Config("traceloop", "1.30", "Traceloop `opentelemetry-instrumentation-mcp`"),
    Config("openlit", "1.30", "OpenLIT"),
    Config("logfire", "1.30", "Logfire `instrument_mcp()`"),
    Config("baseline", "2.3", "baseline: the SDK's own tracing"),
    Config("ours", "2.3", "otel-mcp-health (instrumentation + processor)"),
    Config("openlit", "2.3", "OpenLIT"),
    Config("traceloop", "2.3", "Traceloop `opentelemetry-instrumentation-mcp`"),
    Config("logfire", "2.3", "Logfire `instrument_mcp()`"),
)


def requirements(config: Config) -> list[str]:
    if config.kind == "ours":
        return [MCP[config.line], "-e", str(ROOT)]
    return [MCP[config.line], "opentelemetry-sdk", *PEERS.get(config.kind, ())]


def _stamp(config: Config) -> str:
    parts = [sys.version, *requirements(config), *OTEL]
    if config.kind == "ours":
        parts.append(hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest())
    return "\n".join(parts) + "\n"


def _version(config: Config) -> str:
    """The installed version of what the configuration adds (ours, a peer's package)."""
    package = {"ours": "otel-mcp-health", "baseline": "mcp"}.get(config.kind)
    package = package or PEERS[config.kind][0].split("==")[0]
    proc = subprocess.run(
        [
            str(config.python),
            "-c",
            f"import importlib.metadata as m; print(m.version({package!r}))",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or "?"


def ensure_venv(config: Config) -> str | None:
    """Make or re-use the configuration's venv; None when ready, else why not."""
    return venvs.ensure(config.name, requirements(config), OTEL, _stamp(config)) or None


def _child_env() -> dict[str, str]:
    """This environment less what would change a configuration's set-up."""
    prefixes = ("OTEL_", "LOGFIRE_", "OPENLIT_", "TRACELOOP_", "PYTHON")
    return {key: value for key, value in os.environ.items() if not key.startswith(prefixes)}


def run_child(config: Config, mode: str, url: str) -> dict[str, Any]:
    job = {"kind": config.kind, "mode": mode, "url": url, "calls": CALLS}
    job |= {"warmup": WARMUP, "slices": SLICES}
    try:
        proc = subprocess.run(
            [str(config.python), str(CHILD), json.dumps(job)],
            capture_output=True,
            text=True,
            env=_child_env(),
            timeout=CHILD_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"no answer in {CHILD_TIMEOUT} s"}
    for line in proc.stdout.splitlines():
        if line.startswith("PEERS-RESULT "):
            result: dict[str, Any] = json.loads(line.removeprefix("PEERS-RESULT "))
            return result
    return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"}


@contextmanager
def http_server(config: Config) -> Iterator[str]:
    """The line's server over streamable HTTP in the baseline's venv; yields its URL."""
    if config.line == "1.30":
        command = [str(config.python), str(HERE / "_peers" / "server_v1.py")]
    else:
        command = [str(config.python), str(HERE / "_server.py"), "--http"]
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_child_env()
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        stop_child(proc)


def _same_spans(probe: dict[str, Any], baseline: dict[str, Any]) -> bool:
    return all(
        probe[transport]["names"] == baseline[transport]["names"]
        and probe[transport]["attributes_per_span"] == baseline[transport]["attributes_per_span"]
        for transport in ("in-process", "http")
    )


def _why_not_timed(config: Config, probe: dict[str, Any], base: dict[str, Any]) -> str | None:
    if "error" in probe:
        return "failed: " + probe["error"].strip().splitlines()[-1][:300]
    if "setup_error" in probe:
        return "cannot instrument: " + probe["setup_error"].split(" on <")[0][:300]
    if config.kind != "baseline" and "error" not in base and _same_spans(probe, base):
        return "does nothing: the baseline's spans, unchanged"
    return None


def _record_cells(probe: dict[str, Any]) -> list[str]:
    cells = []
    for transport in ("in-process", "http"):
        got = probe[transport]
        cells.append(f"{got['spans_per_call']:g}")
        cells.append(f"{got['attributes_per_span']:.1f}")
    inproc = probe["in-process"]
    names = ", ".join(
        f"`{name}`" + (f" ×{count:g}" if count != 1 else "")
        for name, count in inproc["names"].items()
    )
    content = [
        what
        for what, seen in (
            ("arguments", inproc["records_arguments"] or probe["http"]["records_arguments"]),
            ("results", inproc["records_results"] or probe["http"]["records_results"]),
        )
        if seen
    ]
    return [*cells, names or "none", " and ".join(content) or "neither"]


def _time_rows(
    timed: Sequence[Config], rounds: list[dict[Config, dict[str, Any]]]
) -> list[list[str]]:
    base = next(config for config in timed if config.kind == "baseline")
    rows = []
    for config in timed:
        paired = [r for r in rounds if config in r and base in r]
        if not paired:
            rows.append([config.label, "no round completed", "", "", "", "", ""])
            continue
        cells = [config.label]
        for transport, measure in (
            ("in-process", "cpu_us"),
            ("http", "cpu_us"),
            ("http", "latency_us"),
        ):
            values = [r[config][transport][measure] for r in paired]
            baseline = [r[base][transport][measure] for r in paired]
            cells += [f"{median(values):.0f}", ratio(values, baseline)]
        rows.append(cells)
    return rows


def _per_round(
    rounds: list[dict[Config, dict[str, Any]]], configs: Sequence[Config], transport: str, what: str
) -> list[list[float]]:
    """``configs``' measure in each round that has them all (one list per config)."""
    paired = [r for r in rounds if all(config in r for config in configs)]
    return [[r[config][transport][what] for r in paired] for config in configs]


def _target_rows(
    timed: Sequence[Config], rounds: list[dict[Config, dict[str, Any]]]
) -> list[list[str]]:
    rows = []
    by_name = {config.name: config for config in timed}
    for line, transport, what, limit in TARGETS:
        ours, base = by_name.get(f"ours-{line}"), by_name.get(f"baseline-{line}")
        peer = by_name.get(f"traceloop-{line}") if limit == TRACELOOP_ADDS else base
        measure = f"{transport} {'CPU' if what == 'cpu_us' else 'latency'}"
        if ours is None or base is None or peer is None:
            rows.append([line, measure, "not timed", "", str(limit)])
            continue
        values, baseline, other = _per_round(rounds, (ours, base, peer), transport, what)
        if limit == TRACELOOP_ADDS:
            pairs = [(v - b, o - b) for v, b, o in zip(values, baseline, other, strict=True)]
            ratios = [added / theirs for added, theirs in pairs if theirs > 0]
            added = median([added for added, _ in pairs]) if pairs else 0.0
            theirs = median([t for _, t in pairs]) if pairs else 0.0
            shown = f"+{added:.0f} µs vs Traceloop's +{theirs:.0f} µs"
            result, bound = (median(ratios) if ratios else float("inf")), 1.0
        else:
            result, bound = ratio_value(values, baseline), float(limit)
            shown = f"{result:.2f}x"
        verdict = "meets" if result <= bound else "misses"
        rows.append([line, measure, shown, f"{result:.2f}x", f"{verdict} ({limit})"])
    return rows


def _time_rounds(timed: Sequence[Config], urls: dict[str, str]) -> list[dict[Config, Any]]:
    """:data:`ROUNDS` rounds, each one fresh child per configuration in a rotated order."""
    rounds = []
    for index in range(ROUNDS):
        shift = index % len(timed) if timed else 0
        measured = {}
        for config in [*timed[shift:], *timed[:shift]]:
            result = run_child(config, "time", urls[config.line])
            if "error" in result or "setup_error" in result:
                print(f"{config.name}, round {index + 1}: {result}", file=sys.stderr)
                continue
            measured[config] = result
        rounds.append(measured)
    return rounds


def main() -> int:
    started = time.monotonic()
    report = Report("Peer benchmark: otel-mcp-health, Traceloop, OpenLIT, Logfire", "peers")
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        installed = dict(zip(CONFIGS, pool.map(ensure_venv, CONFIGS), strict=True))
    built = time.monotonic() - started
    status: dict[Config, str | None] = dict(installed)
    versions = {config: _version(config) for config in CONFIGS if status[config] is None}
    probes: dict[Config, dict[str, Any]] = {}
    with ExitStack() as stack:
        urls = {}
        for line in MCP:
            base = Config("baseline", line, "")
            base = next(config for config in CONFIGS if config.name == base.name)
            if status[base] is None:
                urls[line] = stack.enter_context(http_server(base))
        for config in CONFIGS:
            if status[config] is None and config.line in urls:
                probes[config] = run_child(config, "probe", urls[config.line])
        for config in CONFIGS:
            if config not in probes:
                status[config] = status[config] or "not run: its SDK line's baseline is missing"
                continue
            base = next(c for c in CONFIGS if c.kind == "baseline" and c.line == config.line)
            status[config] = _why_not_timed(config, probes[config], probes[base])
        for config in CONFIGS:
            if ONLY and config.kind not in ONLY | {"baseline"} and status[config] is None:
                status[config] = "not timed: BENCH_PEERS_ONLY"
        timed = [config for config in CONFIGS if status[config] is None]
        rounds = _time_rounds(timed, urls)
    elapsed = time.monotonic() - started
    report.add(
        f"- {ROUNDS} rounds; each round one fresh process per configuration, rotated order; "
        f"per process an in-process session and a streamable HTTP session (127.0.0.1), "
        f"{WARMUP} warm-up calls, then {CALLS['in-process']} in-process and {CALLS['http']} "
        f"HTTP calls in {SLICES} slices after a full garbage collection; CPU per call = the "
        "least disturbed slice, latency = the median call; ratios = median (min-max) of the "
        "per-round ratios to the same round's baseline of the same SDK line",
        "- every configuration in its own venv (`~/.cache/otel-mcp-health-bench/<name>`), "
        f"OpenTelemetry {OTEL[1].split('==')[1]} in all; every span through a "
        "`SimpleSpanProcessor` to an exporter that does nothing; in-process CPU includes the "
        "server (same process), HTTP CPU is the client's only (the server is an "
        "uninstrumented child process, one per SDK line)",
        "- records: a probe process per configuration, 10 calls after 3 warm-up calls, spans "
        "ending during them (`InMemorySpanExporter`); HTTP counts the client's spans only; "
        "'records' = the call's argument or the tool's answer appears in a span attribute or "
        "event",
        f"- venvs ready in {built:.0f} s (0 s when cached); the whole run took {elapsed:.0f} s",
    )
    for line in MCP:
        configs = [config for config in CONFIGS if config.line == line]
        report.add("", f"## mcp {line}: what each records (per `tools/call`)")
        rows = []
        for config in configs:
            version = versions.get(config, "")
            if config in probes and "in-process" in probes[config]:
                cells = _record_cells(probes[config])
            else:
                cells = ["", "", "", "", "", ""]
            said = "; ".join(probes.get(config, {}).get("warnings", ()))[:300]
            note = (status[config] or "timed") + (f" (it says: {said})" if said else "")
            rows.append([config.label, version, *cells, note])
        report.table(
            (
                "configuration",
                "version",
                "spans per call, in-process",
                "attributes per span",
                "spans per call, HTTP client",
                "attributes per span",
                "span names (in-process)",
                "records",
                "status",
            ),
            rows,
        )
        timed_here = [config for config in configs if status[config] is None]
        if timed_here and any(config.kind == "baseline" for config in timed_here):
            report.add("", f"## mcp {line}: what each costs (per `tools/call`)")
            report.table(
                (
                    "configuration",
                    "in-process CPU µs",
                    "× baseline",
                    "HTTP CPU µs",
                    "× baseline",
                    "HTTP latency µs",
                    "× baseline",
                ),
                _time_rows(timed_here, rounds),
            )
    report.add("", "## Ours against the targets (median of the per-round ratios)")
    report.table(
        ("mcp", "measure", "ours", "ratio", "target"),
        _target_rows([config for config in CONFIGS if status[config] is None], rounds),
    )
    report.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
