"""How ``bench_instructions.py`` reads its figures: what a configuration adds, against Traceloop
on mcp 1.30 and against the SDK's own tracing on 2.3, in instructions and in CPU time, and how the
instrumentation and the span processor share it. Pure functions over the measured figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from _common import median
from bench_peers import Config

#: The targets: on mcp 1.30 ours adds at most what Traceloop adds; on 2.3 at most this fraction
#: of the SDK's own traced call.
TRACELOOP_TARGET = 1.0
SDK_TARGET = 0.10


@dataclass(frozen=True)
class Counted:
    config: Config
    kind: str  # the child's kind: ours-instrumentation runs in the ours venv

    @property
    def label(self) -> str:
        if self.kind == "ours-instrumentation":
            return "otel-mcp-health, instrumentation only (no span processor)"
        return self.config.label


def _find(figures: dict[Counted, float], kind: str, line: str) -> float | None:
    return next((v for c, v in figures.items() if (c.kind, c.config.line) == (kind, line)), None)


def _added_ratio(figures: dict[Counted, float], kind: str, line: str) -> float | None:
    """On 1.30, what ``kind`` adds ÷ what Traceloop adds; on 2.3, what it adds ÷ the SDK's own
    tracing (the baseline), each over the baseline of the same line."""
    value, base = _find(figures, kind, line), _find(figures, "baseline", line)
    if value is None or base is None:
        return None
    if line == "1.30":
        peer = _find(figures, "traceloop", line)
        return None if peer is None or peer <= base else (value - base) / (peer - base)
    return (value - base) / base


def _cpu_ratio(rounds: list[dict[Counted, float]], kind: str, line: str) -> float | None:
    ratios = [r for r in (_added_ratio(one, kind, line) for one in rounds) if r is not None]
    return median(ratios) if ratios else None


def _shown(ratio: float | None, line: str) -> str:
    if ratio is None:
        return "-"
    return f"{ratio:.2f}x" if line == "1.30" else f"{ratio:+.1%}"


def rows(counts: dict[Counted, float], rounds: list[dict[Counted, float]]) -> list[list[str]]:
    """One row per configuration: its instructions and CPU time (the median over rounds), and
    what it adds (in CPU time, the median of the per-round differences)."""
    out = []
    for counted, value in counts.items():
        line = counted.config.line
        base = _find(counts, "baseline", line) or value
        cpu = [r[counted] for r in rounds if counted in r]
        cpu_added = [
            r[counted] - low
            for r in rounds
            if counted in r and (low := _find(r, "baseline", line)) is not None
        ]
        against = (
            ""
            if counted.kind == "baseline"
            else _shown(_added_ratio(counts, counted.kind, line), line)
        )
        cpu_against = (
            ""
            if counted.kind == "baseline"
            else _shown(_cpu_ratio(rounds, counted.kind, line), line)
        )
        out.append(
            [
                f"mcp {line}",
                counted.label,
                f"{value / 1000:,.0f} k",
                f"{value / base:.3f}x",
                f"{(value - base) / 1000:+,.0f} k",
                against,
                f"{median(cpu):.0f}" if cpu else "-",
                f"{median(cpu_added):+.0f}" if cpu_added else "-",
                cpu_against,
            ]
        )
    return out


def target_rows(
    counts: dict[Counted, float], rounds: list[dict[Counted, float]]
) -> list[list[str]]:
    """Ours against the two targets, in instructions (the verdict) and in CPU time."""
    out = []
    for line, what, target in (
        ("1.30", "what ours adds ÷ what Traceloop adds", f"≤ {TRACELOOP_TARGET:.2f}x"),
        ("2.3", "what ours adds ÷ the SDK's own tracing", f"≤ +{SDK_TARGET:.0%}"),
    ):
        counted = _added_ratio(counts, "ours", line)
        bound = TRACELOOP_TARGET if line == "1.30" else SDK_TARGET
        verdict = "-" if counted is None else ("meets" if counted <= bound else "misses")
        cpu = _shown(_cpu_ratio(rounds, "ours", line), line)
        out.append([f"mcp {line}", what, _shown(counted, line), cpu, target, verdict])
    return out


def split_rows(counts: dict[Counted, float], rounds: list[dict[Counted, float]]) -> list[list[str]]:
    """Per line: what the instrumentation alone adds, what the processor adds on top."""
    out = []
    for line in ("1.30", "2.3"):
        parts = (
            ("instrumentation only", "ours-instrumentation", "baseline"),
            ("span processor", "ours", "ours-instrumentation"),
            ("the whole", "ours", "baseline"),
        )
        for part, upper, lower in parts:
            high, low = _find(counts, upper, line), _find(counts, lower, line)
            if high is None or low is None:
                continue
            cpu = [
                hi - lo
                for r in rounds
                if (hi := _find(r, upper, line)) is not None
                and (lo := _find(r, lower, line)) is not None
            ]
            shown_cpu = f"{median(cpu):+.0f}" if cpu else "-"
            out.append([f"mcp {line}", part, f"{(high - low) / 1000:+,.0f} k", shown_cpu])
    return out
