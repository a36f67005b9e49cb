"""The cost gate: instructions per unit of work against a committed baseline (``make cost``).

``make test`` runs it. Each metric is counted under ``valgrind --tool=callgrind`` (an instruction
count does not move with the load of a shared machine, CPU time does): ``_cost_child.py`` runs
once with :attr:`Metric.few` units and once with :attr:`Metric.many`, and one unit costs the
difference over ``many - few``. A metric more than :data:`TOLERANCE` above its figure in
``cost_baseline.json`` fails the gate, with the figures. The ``rfc8785`` reference recipe is
counted beside the cold digest, for the ratio only (never gated).

The baseline only moves down on its own. ``make cost-baseline`` (``python
benchmarks/cost_gate.py --write-baseline``) measures and lowers every figure that came out lower,
and keeps the stored figure of any that came out higher, saying so: a cost that rose is never
accepted by rewriting the file in passing. ``python benchmarks/cost_gate.py --raise-baseline`` also
writes the higher figures, prints each one's old and new value, and reminds that the commit
recording that baseline must say in its message why the cost was accepted.

The mcp 1.x line runs in the matrix's ``mcp_latest_1x`` venv, this tree's ``src`` first on its
path. Where that venv is missing (a fresh checkout, before any ``make matrix``), the gate builds it
first the way the matrix does (``nox --install-only``: the same pins, the same cache directory), so
``make cost`` needs no other target before it. Missing valgrind, or a venv that could not be
built, fails the gate: nothing counted is never a pass.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINE = HERE / "cost_baseline.json"
TOLERANCE = 0.05
CHILD = HERE / "_cost_child.py"
COLLECTED = re.compile(r"Collected : (\d+)")
NOX_ENVDIR = Path(
    os.environ.get(
        "NOX_ENVDIR",
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "otel-mcp-health-nox",
    )
)
#: The matrix cell whose venv runs the mcp 1.x metrics (``noxfile.py`` holds its pins).
MCP_1X_CELL = "mcp_latest_1x"
MCP_1X = NOX_ENVDIR / MCP_1X_CELL / "bin" / "python"


@dataclass(frozen=True)
class Metric:
    """One unit of work: what ``_cost_child.py`` runs, in which interpreter, how many times."""

    mode: str
    python: Path
    few: int
    many: int
    gated: bool = True


METRICS = {
    "tools/call, in-process, mcp 2.x, processor on": Metric("call", Path(sys.executable), 5, 105),
    "tools/call, in-process, mcp 1.x, processor on": Metric("call", MCP_1X, 5, 105),
    "tools/list page (5 tools), in-process, mcp 2.x, processor on": Metric(
        "list", Path(sys.executable), 5, 105
    ),
    "cold digest, typical catalog (1,000 tools)": Metric("digest", Path(sys.executable), 1, 4),
    "rfc8785 recipe, same catalog (reference, not gated)": Metric(
        "rfc8785", Path(sys.executable), 1, 4, gated=False
    ),
}


def _instructions(metric: Metric, count: int) -> int:
    """The instructions one child process executed under callgrind (raises if it failed)."""
    command = [str(metric.python), str(CHILD), metric.mode, str(count)]
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": path},
        timeout=1800,
        check=False,
    )
    found = COLLECTED.search(proc.stderr)
    if proc.returncode or found is None:
        raise RuntimeError(f"{metric.mode} x{count}: exit {proc.returncode}: {proc.stderr[-800:]}")
    return int(found.group(1))


def provisioning(names: list[str], python: Path = MCP_1X) -> list[str] | None:
    """The command that builds the mcp 1.x venv at ``python`` when a named metric runs there and
    it does not exist yet; ``None`` when nothing needs building. It is the matrix cell's own
    install step (``nox``'s ``--install-only`` runs a session's installs and nothing else), so the
    venv has the cell's pins and lands where the matrix reuses it."""
    if python.exists() or not any(METRICS[name].python == python for name in names):
        return None
    envdir = python.parents[2]
    return [
        sys.executable,
        "-m",
        "nox",
        "-s",
        MCP_1X_CELL,
        "--install-only",
        "--envdir",
        str(envdir),
    ]


def measure(names: list[str]) -> dict[str, float]:
    """Instructions per unit of each named metric (two child processes each, two at a time)."""
    jobs = [(name, count) for name in names for count in (METRICS[name].few, METRICS[name].many)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        counts = dict(
            zip(
                jobs,
                pool.map(lambda job: _instructions(METRICS[job[0]], job[1]), jobs),
                strict=True,
            )
        )
    return {
        name: (counts[name, m.many] - counts[name, m.few]) / (m.many - m.few)
        for name, m in ((name, METRICS[name]) for name in names)
    }


@dataclass(frozen=True)
class Rewrite:
    """What a baseline rewrite writes (``figures``), which measured figures were above the stored
    ones (``raised``), and one line per entry that changed or was kept (``lines``)."""

    figures: dict[str, int]
    raised: list[str]
    lines: list[str]


def rewrite(
    measured: Mapping[str, float], stored: Mapping[str, float], *, allow_raise: bool
) -> Rewrite:
    """The baseline to write from ``measured``: a figure lower than (or equal to) the stored one,
    or new, is written; a higher one is written only when ``allow_raise``, else the stored figure
    is kept. The file holds the measured metrics only."""
    figures: dict[str, int] = {}
    raised: list[str] = []
    lines: list[str] = []
    for name, value in measured.items():
        new, old = round(value), stored.get(name)
        if old is None:
            figures[name] = new
            lines.append(f"{name}: new, {new:,}")
        elif new > old:
            raised.append(name)
            figures[name] = new if allow_raise else round(old)
            change = f"{old:,.0f} -> {new:,} ({(new - old) / old:+.1%})"
            kept = "" if allow_raise else ": kept the stored figure, it only moves down"
            lines.append(f"{name}: RAISED {change}{kept}")
        else:
            figures[name] = new
            if new < old:
                lines.append(f"{name}: lowered {old:,.0f} -> {new:,} ({(new - old) / old:+.1%})")
    return Rewrite(figures, raised, lines)


def verdict(measured: dict[str, float], baseline: dict[str, float]) -> tuple[bool, list[str]]:
    """Whether every gated metric is within :data:`TOLERANCE` of its baseline, and the table."""
    ok = True
    lines = [f"{'metric':<64} {'baseline':>12} {'measured':>12} {'change':>8}"]
    for name, value in measured.items():
        base = baseline.get(name)
        change = "" if base is None else f"{(value - base) / base:+.1%}"
        mark = ""
        if METRICS[name].gated and (base is None or value > base * (1 + TOLERANCE)):
            ok, mark = False, "  FAIL" if base is not None else "  FAIL (no baseline)"
        elif base is not None and value < base * (1 - TOLERANCE):
            mark = "  (cheaper: make cost-baseline lowers the bar)"
        shown = "-" if base is None else f"{base:,.0f}"
        lines.append(f"{name:<64} {shown:>12} {value:>12,.0f} {change:>8}{mark}")
    digest = measured.get("cold digest, typical catalog (1,000 tools)")
    reference = measured.get("rfc8785 recipe, same catalog (reference, not gated)")
    if digest and reference:
        lines.append(f"cold digest: {reference / digest:.2f}x fewer instructions than rfc8785")
    return ok, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--write-baseline",
        action="store_true",
        help="lower the baseline to every figure that came out lower (never raises one)",
    )
    parser.add_argument(
        "--raise-baseline",
        action="store_true",
        help="write every measured figure, higher ones too (the commit must say why)",
    )
    parser.add_argument("--only", default="", help="the metrics whose name holds this text")
    args = parser.parse_args()
    names = [name for name in METRICS if args.only in name]
    writing = args.write_baseline or args.raise_baseline
    if writing and args.only:
        parser.error("a baseline rewrite measures every metric: no --only")
    if shutil.which("valgrind") is None:
        print("cost gate: valgrind is not installed (make provision installs it)", file=sys.stderr)
        return 2
    build = provisioning(names)
    if build is not None:
        print(f"cost gate: building the mcp 1.x venv ({MCP_1X_CELL}) at {MCP_1X.parent.parent}")
        if subprocess.run(build, cwd=ROOT, check=False).returncode or not MCP_1X.exists():
            print(f"cost gate: could not build the mcp 1.x venv at {MCP_1X}", file=sys.stderr)
            return 2
    measured = measure(names)
    baseline = json.loads(BASELINE.read_text(encoding="utf-8")) if BASELINE.exists() else {}
    if writing:
        plan = rewrite(measured, baseline, allow_raise=args.raise_baseline)
        BASELINE.write_text(json.dumps(plan.figures, indent=2) + "\n", encoding="utf-8")
        print("\n".join(plan.lines or ["no figure changed"]))
        print(f"cost gate: baseline written to {BASELINE.relative_to(ROOT)}")
        if plan.raised and args.raise_baseline:
            print(
                "cost gate: --raise-baseline raised the figures marked RAISED: the commit that "
                "records this baseline must say in its message that --raise-baseline was used "
                "and why each higher cost is accepted"
            )
        elif plan.raised:
            print(
                f"cost gate: {len(plan.raised)} figure(s) came out higher and were not written; "
                "to accept a higher cost, run `python benchmarks/cost_gate.py --raise-baseline` "
                "and say why in the commit message"
            )
        baseline = dict(plan.figures)
    ok, lines = verdict(measured, baseline)
    print("\n".join(["Instructions per unit (callgrind):", *lines]))
    if not ok:
        print(f"cost gate: FAILED (more than +{TOLERANCE:.0%} over {BASELINE.name})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
