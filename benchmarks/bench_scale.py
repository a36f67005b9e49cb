"""Benchmark: discovery and concurrency at scale, plain against instrumented, in the same run.

Run ``python benchmarks/bench_scale.py`` (``make bench`` runs it). Two measurements, each
alternating the two configurations of ``_pipelines.py`` round after round in this one process
(the order flips every round; the first round warms up and is dropped), each ratio the median of
the per-round ratios:

- plain: an SDK TracerProvider and no instrumentation of ours (``mcp`` 2.x makes its own client
  and server spans through it);
- instrumented: + ``McpHealthInstrumentor`` and ``McpHealthSpanProcessor`` in front of the same
  exporter.

**Discovery.** A ``tools/list`` traversal of :data:`PAGES` pages over stdio: the bench server
(``_server.py --stdio --pages N``, a child process) lists one tool per page, chained by
``nextCursor``, and the real ``mcp.Client`` follows the cursors until a page has none. Each round
opens a fresh session per configuration and times :data:`TRAVERSALS` traversals in it, one after
the other, each alone (wall and this process's CPU; the server's CPU is its own process's); the
round keeps the least disturbed one (the minimum wall: other work on a shared machine only ever
adds time, and client and server take turns on its two cores). Target: at most 1.2x plain, wall.

**Concurrency.** :data:`SESSIONS` in-process sessions opened at once, each lists the tools and
makes :data:`CALLS` calls; wall and CPU of the whole batch (client and server share the process).
Target: at most 1.25x plain, wall.

The instrumented pass must produce what it claims to measure: every round counts the exported
spans (every page span carries its page index, the last page the catalog digest and verdict,
every call its verdict) and the benchmark fails if one is missing.

``BENCH_SCALE_ROUNDS`` sets the discovery rounds (default 6; the concurrency rounds are half as
many, at least one). Results: ``benchmarks/.results/scale.md``.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

import _pipelines
from _common import HERE, Report, ratio, ratio_value, spread
from _pipelines import BASELINE, PROCESSED, Config, configured

_pipelines.install()  # before mcp makes any tracer

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from _server import build_server  # noqa: E402
from otel_mcp_health import attributes as A  # noqa: E402

ROUNDS = max(1, int(os.environ.get("BENCH_SCALE_ROUNDS", "6")))
SESSION_ROUNDS = max(1, ROUNDS // 2)
PAGES = 1000
TRAVERSALS = 3
SESSIONS = 200
CALLS = 20
ARGUMENTS = {"query": "otel", "limit": 3}
PLAIN = replace(BASELINE, label="plain: a TracerProvider, no instrumentation")
INSTRUMENTED = replace(PROCESSED, label="instrumented: + instrumentation and processor")
#: The issue's targets, wall time × plain.
DISCOVERY_TARGET = 1.2
CONCURRENCY_TARGET = 1.25


class CountingExporter(SpanExporter):
    """Counts the exported spans that carry our evidence and verdicts (does no I/O)."""

    def __init__(self) -> None:
        self.pages = 0
        self.catalogs = 0
        self.judged_catalogs = 0
        self.calls = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            attrs = span.attributes or {}
            if A.CATALOG_PAGE_INDEX in attrs:
                self.pages += 1
            if A.CATALOG_DIGEST in attrs:
                self.catalogs += 1
            if A.CATALOG_VERDICT in attrs and attrs.get(A.MCP_METHOD_NAME) == "tools/list":
                self.judged_catalogs += 1
            if attrs.get(A.MCP_METHOD_NAME) == "tools/call" and A.VERDICT in attrs:
                self.calls += 1
        return SpanExportResult.SUCCESS


@dataclass
class Timed:
    wall_ms: float
    cpu_ms: float


async def _timed(work: Callable[[], Awaitable[None]]) -> Timed:
    gc.collect()  # every configuration starts from the same collected heap
    cpu, wall = time.process_time_ns(), time.perf_counter_ns()
    await work()
    return Timed((time.perf_counter_ns() - wall) / 1e6, (time.process_time_ns() - cpu) / 1e6)


def _check(config: Config, counted: CountingExporter, expected: dict[str, int]) -> None:
    """Fail the benchmark when the instrumented pass did not produce its spans."""
    if not config.instrumented:
        return
    found = {name: getattr(counted, name) for name in expected}
    if found != expected:
        sys.exit(f"bench_scale: the instrumented pass exported {found}, expected {expected}")


# ----------------------------------------------------------------------------------------------
# Discovery: one long traversal over stdio
# ----------------------------------------------------------------------------------------------
def paged_server() -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=[str(HERE / "_server.py"), "--stdio", "--pages", str(PAGES)]
    )


async def traverse(client: Client) -> None:
    """List every page, following ``nextCursor`` as an application does."""
    cursor: str | None = None
    pages = 0
    while True:
        result = await client.list_tools(cursor=cursor)
        pages += 1
        cursor = result.next_cursor
        if cursor is None:
            break
    if pages != PAGES:
        sys.exit(f"bench_scale: the traversal had {pages} pages, expected {PAGES}")


async def _discovery_round(config: Config) -> Timed:
    counted = CountingExporter()
    with configured(config, counted):
        async with Client(paged_server(), mode="legacy") as client:  # the handshake is done
            timed = [await _timed(lambda: traverse(client)) for _ in range(TRAVERSALS)]
    expected = {"pages": PAGES, "catalogs": 1, "judged_catalogs": 1}
    _check(config, counted, {name: count * TRAVERSALS for name, count in expected.items()})
    return min(timed, key=lambda t: t.wall_ms)


# ----------------------------------------------------------------------------------------------
# Concurrency: many in-process sessions at once
# ----------------------------------------------------------------------------------------------
async def one_session() -> None:
    async with Client(build_server(), mode="legacy") as client:
        await client.list_tools()
        for _ in range(CALLS):
            await client.call_tool("lookup", ARGUMENTS)


async def concurrent_sessions() -> None:
    async with anyio.create_task_group() as group:
        for _ in range(SESSIONS):
            group.start_soon(one_session)


async def _concurrency_round(config: Config) -> Timed:
    counted = CountingExporter()
    with configured(config, counted):
        timed = await _timed(concurrent_sessions)
    _check(config, counted, {"calls": SESSIONS * CALLS})
    return timed


# ----------------------------------------------------------------------------------------------
async def _alternate(
    measure: Callable[[Config], Awaitable[Timed]], rounds: int
) -> dict[Config, list[Timed]]:
    results: dict[Config, list[Timed]] = {PLAIN: [], INSTRUMENTED: []}
    for index in range(rounds + 1):  # round 0 warms up and is dropped
        order = (PLAIN, INSTRUMENTED) if index % 2 == 0 else (INSTRUMENTED, PLAIN)
        for config in order:
            timed = await measure(config)
            if index:
                results[config].append(timed)
    return results


def _rows(results: dict[Config, list[Timed]], per: int, unit: str) -> list[list[str]]:
    base_wall = [t.wall_ms for t in results[PLAIN]]
    base_cpu = [t.cpu_ms for t in results[PLAIN]]
    rows = []
    for config, timed in results.items():
        wall = [t.wall_ms for t in timed]
        cpu = [t.cpu_ms for t in timed]
        added = [(w - b) * 1000 / per for w, b in zip(wall, base_wall, strict=True)]
        rows.append(
            [
                config.label,
                spread(wall, 0),
                ratio(wall, base_wall),
                spread(cpu, 0),
                ratio(cpu, base_cpu),
                "" if config is PLAIN else f"{spread(added, 0)} µs per {unit}",
            ]
        )
    return rows


def _target(name: str, results: dict[Config, list[Timed]], limit: float) -> list[str]:
    wall = ratio_value(
        [t.wall_ms for t in results[INSTRUMENTED]], [t.wall_ms for t in results[PLAIN]]
    )
    verdict = "meets" if wall <= limit else "misses"
    return [name, f"{wall:.2f}x", f"{verdict} <= {limit}x"]


HEADER = ("configuration", "wall ms", "× plain", "CPU ms", "× plain", "wall added")


async def _main(report: Report) -> None:
    discovery = await _alternate(_discovery_round, ROUNDS)
    report.add("", f"## A {PAGES:,}-page `tools/list` traversal over stdio ({ROUNDS} rounds)")
    report.table(HEADER, _rows(discovery, PAGES, "page"))
    concurrency = await _alternate(_concurrency_round, SESSION_ROUNDS)
    report.add(
        "",
        f"## {SESSIONS} concurrent in-process sessions × {CALLS} calls ({SESSION_ROUNDS} rounds)",
    )
    report.table(HEADER, _rows(concurrency, SESSIONS * CALLS, "call"))
    report.add("", "## Against the targets (wall, median of the per-round ratios)")
    report.table(
        ("measure", "× plain", "target"),
        [
            _target(f"{PAGES:,}-page traversal", discovery, DISCOVERY_TARGET),
            _target(f"{SESSIONS} sessions × {CALLS} calls", concurrency, CONCURRENCY_TARGET),
        ],
    )


def main() -> int:
    report = Report("Discovery and concurrency benchmark", "scale")
    report.add(
        f"- {ROUNDS} discovery and {SESSION_ROUNDS} concurrency rounds after a warm-up round that "
        "is dropped (`BENCH_SCALE_ROUNDS`); plain and instrumented alternate in one process, the "
        "order flipped every round; medians over rounds with (min-max); ratios are per-round "
        "ratios to plain in the same round",
        "- plain: an SDK TracerProvider (`mcp` makes its own client and server spans) with "
        "`SimpleSpanProcessor` to an exporter that counts and does no I/O; instrumented adds "
        "`McpHealthInstrumentor` and `McpHealthSpanProcessor` in front of the same exporter",
        f"- discovery: a fresh stdio session per configuration and round, {TRAVERSALS} "
        f"traversals of {PAGES:,} one-tool pages in it, each timed alone, the least disturbed "
        "(minimum wall) kept; CPU is this process's (the client), the server is a child process",
        f"- concurrency: {SESSIONS} in-process sessions at once, each `tools/list` then {CALLS} "
        "`tools/call`; CPU includes the servers (same process)",
        "- every instrumented round checks its exported spans: every page indexed, the catalog "
        "digested and judged once, every call judged",
    )
    anyio.run(_main, report)
    report.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
