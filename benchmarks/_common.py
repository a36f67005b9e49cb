"""What every benchmark shares: where results go, the header they start with, how numbers read.

Results are written to ``benchmarks/.results/`` (ignored by git), so ``make bench`` leaves the tree
clean; ``make bench-publish`` copies them to ``benchmarks/results/`` on purpose. Every figure is a
median with its range (min-max over the runs) and every ratio is taken against a baseline
measured in the same process, alternating with it, because the machine may be shared: absolute
numbers drift with the load, same-run ratios much less.
"""

from __future__ import annotations

import datetime
import os
import pathlib
import platform
import statistics
import subprocess
import sys
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = pathlib.Path(os.environ.get("BENCH_RESULTS", HERE / ".results"))


class NoOpExporter(SpanExporter):
    """Accepts every batch and does nothing: the pipeline's cost without any I/O."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min), {five:.2f} (5 min)"


def _revision() -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
    except OSError:
        return "unknown"
    return proc.stdout.strip() or "unknown"


class Report:
    """A markdown report: a header with the machine's state, then the benchmark's lines."""

    def __init__(self, title: str, name: str) -> None:
        self.name = name
        self.lines = [
            f"# {title} ({datetime.date.today().isoformat()}, commit {_revision()})",
            "",
            (
                f"- python {platform.python_version()} on {platform.machine()}, "
                f"{os.cpu_count()} CPUs; load average at start {_load()}"
            ),
            (
                "- the machine may be shared with other work: read the same-run ratios, not the "
                "absolute times"
            ),
        ]

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def table(self, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        self.lines += [
            "",
            "| " + " | ".join(header) + " |",
            "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows),
            "",
        ]

    def write(self) -> pathlib.Path:
        self.lines += [
            f"- load average at end {_load()}",
            "",
            "Benchmarks report; they do not gate.",
        ]
        text = "\n".join(self.lines) + "\n"
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"{self.name}.md"
        path.write_text(text, encoding="utf-8")
        sys.stdout.write(text)
        return path


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def spread(values: Sequence[float], digits: int = 1) -> str:
    """``median (min-max)`` of ``values``."""
    return f"{median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def ratio(values: Sequence[float], baseline: Sequence[float]) -> str:
    """Median of the per-run ratios (runs paired in order) with their range, e.g. ``1.21x``."""
    ratios = [value / base for value, base in zip(values, baseline, strict=True)]
    return f"{median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def ratio_value(values: Sequence[float], baseline: Sequence[float]) -> float:
    return median([value / base for value, base in zip(values, baseline, strict=True)])


def stop_child(proc: subprocess.Popen[str]) -> None:
    """Stop a server child that runs until its stdin closes (killed after 10 s)."""
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
