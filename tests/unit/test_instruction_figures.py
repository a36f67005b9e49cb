"""How ``make bench-instructions`` reads its figures (benchmarks/_instruction_figures.py): what ours
adds against Traceloop on mcp 1.30 and against the SDK's own tracing on 2.3, and the split between
the instrumentation and the span processor. The counting runs under valgrind; here the arithmetic.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))  # the benchmarks import each other by plain name
    import _instruction_figures

    return _instruction_figures


def _counts(figures: ModuleType) -> dict[object, float]:
    import bench_peers

    by_name = {config.name: config for config in bench_peers.CONFIGS}
    return {
        figures.Counted(by_name["baseline-1.30"], "baseline"): 1_400_000.0,
        figures.Counted(by_name["ours-1.30"], "ours"): 2_000_000.0,
        figures.Counted(by_name["ours-1.30"], "ours-instrumentation"): 1_850_000.0,
        figures.Counted(by_name["traceloop-1.30"], "traceloop"): 1_700_000.0,
        figures.Counted(by_name["baseline-2.3"], "baseline"): 1_750_000.0,
        figures.Counted(by_name["ours-2.3"], "ours"): 1_890_000.0,
        figures.Counted(by_name["ours-2.3"], "ours-instrumentation"): 1_820_000.0,
    }


def test_each_line_is_read_against_its_own_target(figures: ModuleType) -> None:
    counts = _counts(figures)
    rounds = [{c: v / 10_000 for c, v in counts.items()}]
    assert figures.target_rows(counts, rounds) == [
        ["mcp 1.30", "what ours adds ÷ what Traceloop adds", "2.00x", "2.00x", "≤ 1.00x", "misses"],
        ["mcp 2.3", "what ours adds ÷ the SDK's own tracing", "+8.0%", "+8.0%", "≤ +10%", "meets"],
    ]


def test_the_split_adds_up_to_the_whole(figures: ModuleType) -> None:
    counts = _counts(figures)
    rounds = [{c: v / 10_000 for c, v in counts.items()}]
    assert figures.split_rows(counts, rounds) == [
        ["mcp 1.30", "instrumentation only", "+450 k", "+45"],
        ["mcp 1.30", "span processor", "+150 k", "+15"],
        ["mcp 1.30", "the whole", "+600 k", "+60"],
        ["mcp 2.3", "instrumentation only", "+70 k", "+7"],
        ["mcp 2.3", "span processor", "+70 k", "+7"],
        ["mcp 2.3", "the whole", "+140 k", "+14"],
    ]


def test_cpu_ratios_are_the_median_of_the_per_round_ratios(figures: ModuleType) -> None:
    counts = _counts(figures)
    rounds = [{c: v / 10_000 for c, v in counts.items()} for _ in range(3)]
    ours = next(c for c in counts if (c.kind, c.config.line) == ("ours", "1.30"))
    base = next(c for c in counts if (c.kind, c.config.line) == ("baseline", "1.30"))
    rounds[0][ours] = 300.0  # a disturbed round: +160 µs, 5.33x Traceloop's +30 µs
    rounds[2][base] = 100.0  # another: +100 µs, 1.43x Traceloop's +70 µs
    row = next(r for r in figures.rows(counts, rounds) if r[1] == ours.label and "1.30" in r[0])
    assert row[6:] == ["200", "+100", "2.00x"]  # medians of 300/200/200, 160/60/100, 5.33/2/1.43


def test_a_missing_peer_reads_as_unmeasured_not_as_a_ratio(figures: ModuleType) -> None:
    counts = {c: v for c, v in _counts(figures).items() if c.kind != "traceloop"}
    assert figures.target_rows(counts, [])[0][2:] == ["-", "-", "≤ 1.00x", "-"]
