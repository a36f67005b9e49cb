"""Benchmark: what our instrumentation and processor add to a ``tools/call``, against the SDK's own
tracing, in-process, over stdio and over streamable HTTP, and 200 concurrent sessions.

Run ``python benchmarks/bench_calls.py`` (``make bench`` runs it). The configurations
(``_pipelines.py``): no tracing; the SDK's own tracing (``mcp`` 2.x makes its client and server
spans when a TracerProvider is set: the baseline); + our instrumentation; + our instrumentation
and processor; the same with an SDK MeterProvider. Each round runs every configuration once,
in a rotated order, in this one process (the global provider is switched between them), so
drift and load hit all of them alike; each ratio is taken against the baseline of its round.

Per configuration and round, a fresh ``mcp.Client`` session (``mode="legacy"``: JSON-RPC, so the
SDK makes its client span) lists the tools, warms up, then makes ``CALLS`` calls to a tool that
does almost nothing (``_server.py``), in ``SLICES`` consecutive slices after a full garbage
collection. CPU per call is this process's CPU time per call in the least disturbed slice (the
minimum over the slices: other work on a shared machine only ever adds time, in bursts that hit
one slice and not the next; in-process it includes the server, over stdio and HTTP the server is
a child process and only the client is counted); latency is the median wall time of one call.
The first round warms the process up (imports, caches, the first child processes) and is not
reported.

200 concurrent sessions: 200 in-process sessions opened at once, each lists the tools and makes
three calls; wall time and CPU time of the whole batch, alternating the baseline with our full
set-up (instrumentation, processor, MeterProvider). Results: ``benchmarks/.results/calls.md``.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import _pipelines
from _common import HERE, Report, median, ratio, ratio_value, spread, stop_child
from _pipelines import BASELINE, CONFIGS, METERED, PROCESSED, Config, configured

_pipelines.install()  # before mcp makes any tracer

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from _server import build_server  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "10"))
CALLS = {"in-process": 300, "stdio": 200, "streamable HTTP": 150}
SLICES = 5
WARMUP = 20
SESSIONS = 200
SESSION_ROUNDS = 4
ARGUMENTS = {"query": "otel", "limit": 3}
#: The issue's targets: (transport, configuration, measure, at most × the SDK's own tracing).
TARGETS = (
    ("in-process", PROCESSED, "CPU", 1.15),
    ("stdio", PROCESSED, "CPU", 1.15),
    ("stdio", PROCESSED, "latency", 1.05),
    ("streamable HTTP", PROCESSED, "latency", 1.05),
    ("in-process", METERED, "CPU", 1.25),
    ("stdio", METERED, "CPU", 1.25),
)


async def _calls(client: Client, count: int) -> tuple[float, float]:
    """``count`` calls in :data:`SLICES` slices: (CPU µs per call of the least disturbed slice,
    median latency µs)."""
    latencies = []
    slices = []
    per_slice = count // SLICES
    gc.collect()  # every configuration starts from the same collected heap
    for _ in range(SLICES):
        cpu = time.process_time_ns()
        for _ in range(per_slice):
            start = time.perf_counter_ns()
            await client.call_tool("lookup", ARGUMENTS)
            latencies.append((time.perf_counter_ns() - start) / 1000)
        slices.append((time.process_time_ns() - cpu) / per_slice / 1000)
    return min(slices), median(latencies)


async def _session_calls(make: Callable[[], Client], count: int) -> tuple[float, float]:
    async with make() as client:
        await client.list_tools()
        for _ in range(WARMUP):
            await client.call_tool("lookup", ARGUMENTS)
        return await _calls(client, count)


def _rotated(round_index: int) -> list[Config]:
    shift = round_index % len(CONFIGS)
    return list(CONFIGS[shift:] + CONFIGS[:shift])


async def _transport(
    make: Callable[[], Client], count: int
) -> dict[Config, list[tuple[float, float]]]:
    results: dict[Config, list[tuple[float, float]]] = {config: [] for config in CONFIGS}
    for index in range(ROUNDS + 1):  # round 0 warms up and is dropped
        by_config = {}
        for config in _rotated(index):
            with configured(config):
                by_config[config] = await _session_calls(make, count)
        for config in CONFIGS:  # keep rounds aligned for the paired ratios
            if index:
                results[config].append(by_config[config])
    return results


@asynccontextmanager
async def _http_server() -> AsyncIterator[str]:
    """The bench server over streamable HTTP in a child process; yields its URL."""
    proc = subprocess.Popen(  # noqa: ASYNC220  # started once; its URL is one short line
        [sys.executable, str(HERE / "_server.py"), "--http"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = await anyio.to_thread.run_sync(proc.stdout.readline)
        yield url.strip()
    finally:
        stop_child(proc)


def _target_row(
    measured: dict[str, dict[Config, list[tuple[float, float]]]],
    target: tuple[str, Config, str, float],
) -> list[str]:
    transport, config, what, limit = target
    index = 0 if what == "CPU" else 1
    values = [value[index] for value in measured[transport][config]]
    baseline = [value[index] for value in measured[transport][BASELINE]]
    result = ratio_value(values, baseline)
    verdict = "meets" if result <= limit else "misses"
    return [transport, config.label, what, f"{result:.2f}x", f"{verdict} <= {limit}x"]


def _call_rows(results: dict[Config, list[tuple[float, float]]]) -> list[list[str]]:
    base_cpu = [cpu for cpu, _ in results[BASELINE]]
    base_lat = [lat for _, lat in results[BASELINE]]
    rows = []
    for config in CONFIGS:
        cpu = [value for value, _ in results[config]]
        lat = [value for _, value in results[config]]
        rows.append(
            [
                config.label,
                spread(cpu, 0),
                ratio(cpu, base_cpu),
                spread(lat, 0),
                ratio(lat, base_lat),
            ]
        )
    return rows


async def _one_session() -> None:
    async with Client(build_server(), mode="legacy") as client:
        await client.list_tools()
        for _ in range(3):
            await client.call_tool("lookup", ARGUMENTS)


async def _concurrent() -> tuple[float, float]:
    """(wall ms, CPU ms) of :data:`SESSIONS` sessions at once."""
    cpu, wall = time.process_time_ns(), time.perf_counter_ns()
    async with anyio.create_task_group() as group:
        for _ in range(SESSIONS):
            group.start_soon(_one_session)
    return (time.perf_counter_ns() - wall) / 1e6, (time.process_time_ns() - cpu) / 1e6


async def _concurrency_rows() -> list[list[str]]:
    results: dict[Config, list[tuple[float, float]]] = {BASELINE: [], METERED: []}
    for index in range(SESSION_ROUNDS + 1):  # round 0 warms up and is dropped
        order = (BASELINE, METERED) if index % 2 == 0 else (METERED, BASELINE)
        for config in order:
            with configured(config):
                gc.collect()
                measured = await _concurrent()
            if index:
                results[config].append(measured)
    rows = []
    base_wall = [wall for wall, _ in results[BASELINE]]
    base_cpu = [cpu for _, cpu in results[BASELINE]]
    for config, values in results.items():
        wall = [value for value, _ in values]
        cpu = [value for _, value in values]
        rows.append(
            [
                config.label,
                spread(wall, 0),
                ratio(wall, base_wall),
                spread(cpu, 0),
                ratio(cpu, base_cpu),
            ]
        )
    return rows


def _clients(url: str) -> dict[str, Callable[[], AbstractAsyncContextManager[Any]]]:
    stdio = StdioServerParameters(
        command=sys.executable, args=[str(HERE / "_server.py"), "--stdio"]
    )
    return {
        "in-process": lambda: Client(build_server(), mode="legacy"),
        "stdio": lambda: Client(stdio, mode="legacy"),
        "streamable HTTP": lambda: Client(url, mode="legacy"),
    }


async def _main(report: Report) -> None:
    header: Sequence[str] = (
        "configuration",
        "CPU µs per call",
        "× SDK tracing",
        "latency µs",
        "× SDK tracing",
    )
    measured = {}
    async with _http_server() as url:
        for transport, make in _clients(url).items():
            results = await _transport(make, CALLS[transport])  # type: ignore[arg-type]
            measured[transport] = results
            report.add("", f"## {transport} `tools/call` ({CALLS[transport]} calls per round)")
            report.table(header, _call_rows(results))
    report.add("", "## Against the targets (median of the per-round ratios)")
    report.table(
        ("transport", "configuration", "measure", "× SDK tracing", "target"),
        [_target_row(measured, target) for target in TARGETS],
    )
    report.add("", f"## {SESSIONS} concurrent in-process sessions (list + 3 calls each)")
    report.table(
        ("configuration", "wall ms", "× SDK tracing", "CPU ms", "× SDK tracing"),
        await _concurrency_rows(),
    )


def main() -> int:
    report = Report("MCP call overhead benchmark", "calls")
    report.add(
        f"- {ROUNDS} rounds after a warm-up round that is dropped; every configuration once per "
        "round, rotated order, one process; medians over rounds with (min-max); ratios are "
        "per-round ratios to the baseline of the same round",
        f"- per session: a full garbage collection, then the calls in {SLICES} slices; CPU per "
        "call = the least disturbed slice (minimum over slices: a shared machine only adds "
        "time), latency = the median call",
        "- baseline: the SDK's own tracing (`mcp` makes its client and server spans) through an "
        "SDK TracerProvider with `SimpleSpanProcessor(NoOpExporter())`; ours add "
        "`McpHealthInstrumentor` and `McpHealthSpanProcessor` in front of the same exporter",
        '- `mcp.Client(..., mode="legacy")`; CPU = this process\'s CPU time; in-process it '
        "includes the server, over stdio and HTTP only the client (the server is a child process)",
    )
    anyio.run(_main, report)
    report.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
