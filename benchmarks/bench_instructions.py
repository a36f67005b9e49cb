"""Benchmark: instructions per in-process ``tools/call`` under callgrind, ours against the baseline
of the same SDK line and against Traceloop, and the floor an SDK span sets.

Run ``make bench-instructions`` (it needs ``valgrind``; ``make bench`` leaves it out, it takes about
8 minutes on two cores). CPU-time ratios on a shared two-core machine range widely from round to
round; an instruction count does not move with the load, so small changes to the per-call path
show here first (a cycle is not an instruction: read the counts as the work done, the CPU-time
ratios of ``bench_peers.py`` as what it costs).

Method: each configuration runs ``_peers/child.py`` in mode ``calls`` (an in-process session, the
tools listed, 20 warm-up calls, then the calls) in its venv of ``bench_peers.py`` under
``valgrind --tool=callgrind``, once with :data:`FEW` calls and once with :data:`MANY`; the
difference over ``MANY - FEW`` is one call's instructions (start-up, imports and the session's
opening cancel out). ``PYTHONHASHSEED=0``. The floors: the SDK alone starting a CLIENT span and
ending it through a ``SimpleSpanProcessor`` to an exporter that does nothing, with the number of
attributes given at the start and at the end, in the ``ours-1.30`` venv. Results:
``benchmarks/.results/instructions.md``.

The same run reports, beside the counts: each configuration's CPU time per call (for honesty: the
same child in the same venv without valgrind, mode ``time``, in-process only, :data:`CPU_ROUNDS`
rounds in a rotated order; per child the least disturbed of five slices, per configuration the
median over rounds, each ratio the median of the per-round ratios); ours against the targets in
both measures (``_instruction_figures.py`` reads the figures); what the instrumentation alone adds
and what the span processor adds on top; and the work of three other units (:data:`ELSEWHERE`:
a ``tools/list`` page, a 1,000-page traversal, a session among many at once), counted the same
way on ``_cost_child.py`` in the 2.3 venvs, ours against plain (the baseline's set-up).

Per LLM request (:data:`OFFERED_TOOLS`): what reading the tools a request offers adds
(``otel_mcp_health.model_requests``), measured the same way (with :data:`REQUESTS_FEW` and
:data:`REQUESTS_MANY` requests) on ``_model_request_child.py``:
Chat Completions requests through the real OpenAI SDK answered in process, with and without the
instrumentation, in the interpreter running this script; added = instrumented - plain.
``python benchmarks/bench_instructions.py model-requests`` runs this case alone (results:
``benchmarks/.results/instructions-model-requests.md``).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable

from _common import HERE, Report
from _instruction_figures import Counted, rows, split_rows, target_rows
from bench_peers import CONFIGS, Config, ensure_venv

FEW, MANY = 5, 405
#: (label, attributes at the start, attributes at the end): what a bare SDK span costs. Ours on an
#: in-process 1.x call writes 7 at the start and 6 at the end; Traceloop's span carries 4.
SPANS = (
    ("a CLIENT span, no attribute", 0, 0),
    ("a CLIENT span, 4 attributes at its start (Traceloop's count)", 4, 0),
    ("a CLIENT span, 7 attributes at its start and 6 at its end (ours on 1.x)", 7, 6),
)
SPAN_SCRIPT = textwrap.dedent(
    """
    import sys
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.trace import SpanKind

    class Nothing(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Nothing()))
    tracer = provider.get_tracer("bench")
    first, last, count = (int(arg) for arg in sys.argv[1:])
    start = {f"mcp_health.start{i}": "value" if i % 2 else i for i in range(first)}
    end = {f"mcp_health.end{i}": "value" for i in range(last)}
    for _ in range(count):
        span = tracer.start_span("tools/call lookup", kind=SpanKind.CLIENT, attributes=start)
        if end:
            span.set_attributes(end)
        span.end()
    """
)
#: Function tools offered per LLM request in the per-request case, and its request counts (an
#: OpenAI SDK request costs tens of millions of instructions: fewer requests suffice).
OFFERED_TOOLS = (10, 100)
REQUESTS_FEW, REQUESTS_MANY = 5, 85
COLLECTED = re.compile(r"Collected : (\d+)")
CPU_ROUNDS = 3
CPU_CALLS = 200
#: Other units whose cost must not rise: (label, ``_cost_child.py`` mode, few, many), counted in
#: the 2.3 venvs; one unit = (count(many) - count(few)) / (many - few).
ELSEWHERE = (
    ("a `tools/list` page (five tools)", "list", 5, 105),
    ("a 1,000-page `tools/list` traversal, in process", "traversal", 0, 1),
    ("a session (list + 3 calls) among 20 → 220 in-process sessions at once", "sessions", 20, 220),
)
#: A process's command line, given how many calls (or spans) it makes.
Command = Callable[[int], list[str]]


def _counted() -> list[Counted]:
    chosen = []
    for config in CONFIGS:
        if config.kind in ("baseline", "ours") or (config.kind, config.line) == (
            "traceloop",
            "1.30",
        ):
            chosen.append(Counted(config, config.kind))
        if config.kind == "ours":
            chosen.append(Counted(config, "ours-instrumentation"))
    return chosen


def _instructions(command: list[str]) -> int:
    """The instructions ``command`` executed under callgrind (raises if it failed)."""
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        timeout=1200,
        check=False,
    )
    found = COLLECTED.search(proc.stderr)
    if proc.returncode or found is None:
        raise RuntimeError(f"{command[1:]}: exit {proc.returncode}: {proc.stderr[-300:]}")
    return int(found.group(1))


def _per_call(make: Command, few: int = FEW, many: int = MANY) -> float:
    """One call's instructions: (``many`` calls - ``few`` calls) / (``many`` - ``few``)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        counted_few, counted_many = pool.map(lambda n: _instructions(make(n)), (few, many))
    return (counted_many - counted_few) / (many - few)


def _child(counted: Counted) -> Command:
    def command(calls: int) -> list[str]:
        job = {"kind": counted.kind, "mode": "calls", "url": "", "warmup": 20}
        job["calls"] = {"in-process": calls}
        return [str(counted.config.python), str(HERE / "_peers" / "child.py"), json.dumps(job)]

    return command


def _cost_child(config: Config, mode: str) -> Command:
    kind = "ours" if config.kind == "ours" else "baseline"
    child = str(HERE / "_cost_child.py")
    return lambda count: [str(config.python), child, mode, str(count), kind]


def _cpu_us(counted: Counted) -> float:
    """CPU µs per in-process call of one fresh child, without valgrind (its least disturbed
    slice), in the environment the counted children run in."""
    job = {"kind": counted.kind, "mode": "time", "url": "", "warmup": 20, "slices": 5}
    job["calls"] = {"in-process": CPU_CALLS}
    proc = subprocess.run(
        [str(counted.config.python), str(HERE / "_peers" / "child.py"), json.dumps(job)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        timeout=600,
        check=False,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("PEERS-RESULT "):
            result = json.loads(line.removeprefix("PEERS-RESULT "))
            if "in-process" in result:
                return float(result["in-process"]["cpu_us"])
            raise RuntimeError(f"{counted.label}: {result}")
    raise RuntimeError(f"{counted.label}: exit {proc.returncode}: {proc.stderr[-300:]}")


def _cpu_rounds(counted: list[Counted]) -> list[dict[Counted, float]]:
    """:data:`CPU_ROUNDS` rounds, one fresh child per configuration each, in a rotated order."""
    rounds = []
    for index in range(CPU_ROUNDS):
        shift = index % len(counted)
        rounds.append({c: _cpu_us(c) for c in [*counted[shift:], *counted[:shift]]})
    return rounds


def _span(first: int, last: int) -> Command:
    python = next(config.python for config in CONFIGS if config.name == "ours-1.30")
    return lambda count: [str(python), "-c", SPAN_SCRIPT, str(first), str(last), str(count)]


def _elsewhere_rows() -> list[list[str]]:
    """The :data:`ELSEWHERE` units, plain (the baseline's set-up) and ours, on mcp 2.3."""
    by_name = {config.name: config for config in CONFIGS}
    plain, ours = by_name["baseline-2.3"], by_name["ours-2.3"]
    rows = []
    for label, mode, few, many in ELSEWHERE:
        base = _per_call(_cost_child(plain, mode), few, many)
        value = _per_call(_cost_child(ours, mode), few, many)
        rows.append(
            [
                label,
                f"{base / 1000:,.0f} k",
                f"{value / 1000:,.0f} k",
                f"{value / base:.3f}x",
                f"{(value - base) / 1000:+,.0f} k",
            ]
        )
    return rows


def _model_request(mode: int, tools: int) -> Command:
    """``mode``: 0 plain, 1 instrumented, 2 instrumented with the LLM client hooks unwrapped."""
    child = str(HERE / "_model_request_child.py")
    return lambda count: [sys.executable, child, str(mode), str(count), str(tools)]


def _model_requests(report: Report) -> None:
    """The per-LLM-request case: instructions per Chat Completions request, plain and read."""
    rows = []
    for tools in OFFERED_TOOLS:
        counts = (REQUESTS_FEW, REQUESTS_MANY)
        plain, read, unread = (_per_call(_model_request(m, tools), *counts) for m in (0, 1, 2))
        rows.append(
            [
                str(tools),
                f"{plain / 1000:,.0f} k",
                f"{read / 1000:,.0f} k",
                f"{(read - plain) / 1000:+,.1f} k",
                f"{(read - unread) / 1000:+,.1f} k",
            ]
        )
    report.add(
        "",
        "## Per LLM request (OpenAI Chat Completions, answered in process)",
        "",
        "What the instrumentation adds to a request the application makes through the real "
        "OpenAI SDK, and of that what the reading itself costs (``model_requests``, the recorder "
        "as installed): instrumented minus instrumented with the LLM client hooks unwrapped "
        "again. The rest is the instrumented process's larger heap (the SDK, mcp and their "
        "modules imported), which the garbage collector walks more of per request.",
    )
    report.table(("tools offered", "plain", "instrumented", "added", "of which the reading"), rows)


def main() -> int:
    if sys.argv[1:] == ["model-requests"]:
        report = Report("Instructions per LLM request (callgrind)", "instructions-model-requests")
        if shutil.which("valgrind") is None:
            report.add(
                "", "valgrind is not installed (`apt-get install valgrind`): nothing counted."
            )
        else:
            _model_requests(report)
        report.write()
        return 0
    report = Report("Instructions per in-process `tools/call` (callgrind)", "instructions")
    if shutil.which("valgrind") is None:
        report.add("", "valgrind is not installed (`apt-get install valgrind`): nothing counted.")
        report.write()
        return 0
    started = time.monotonic()
    counted = [c for c in _counted() if ensure_venv(c.config) is None]
    counts = {c: _per_call(_child(c)) for c in counted}
    spans = {label: _per_call(_span(first, last)) for label, first, last in SPANS}
    elsewhere = _elsewhere_rows()
    rounds = _cpu_rounds(counted)
    report.add(
        f"- per call: (instructions with {MANY} calls - with {FEW} calls) / {MANY - FEW}, each "
        "process under `valgrind --tool=callgrind`, `PYTHONHASHSEED=0`; the venvs of "
        "`bench_peers.py`; the server runs in the same process",
        f"- CPU time: the same children without valgrind, {CPU_ROUNDS} rounds in a rotated "
        f"order, {CPU_CALLS} in-process calls each after 20 warm-up calls, the least disturbed "
        "of 5 slices; µs per call, median over rounds; ratios the median of the per-round ratios",
        "- against: on mcp 1.30, what the configuration adds ÷ what Traceloop adds; on 2.3, "
        "what it adds ÷ the SDK's own tracing (the baseline)",
        f"- the whole run took {time.monotonic() - started:.0f} s",
        "",
        "## Per call",
    )
    report.table(
        (
            "line",
            "configuration",
            "instructions",
            "× baseline",
            "added",
            "against",
            "CPU µs",
            "CPU added µs",
            "CPU against",
        ),
        rows(counts, rounds),
    )
    report.add("", "## Ours against the targets")
    report.table(
        ("line", "measure", "instructions", "CPU time", "target", "in instructions"),
        target_rows(counts, rounds),
    )
    report.add("", "## What the instrumentation and the span processor each add")
    report.table(("line", "part", "instructions", "CPU µs"), split_rows(counts, rounds))
    report.add(
        "",
        "## Elsewhere, mcp 2.3 (plain: a TracerProvider, no instrumentation of ours)",
        "",
        "The processor's memory per session is not counted here: "
        "`python tests/faults/load_host.py state 2000 1 2000` (typical) and "
        "`state 8 1100 8` (worst case) print it.",
    )
    report.table(("one unit", "plain", "ours", "× plain", "added"), elsewhere)
    report.add("", "## The SDK's span alone (the floor of any span-making instrumentation)")
    report.table(
        ("span", "instructions"),
        [[label, f"{value / 1000:,.0f} k"] for label, value in spans.items()],
    )
    _model_requests(report)
    report.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
