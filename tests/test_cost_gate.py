"""The cost gate's verdict (benchmarks/cost_gate.py): more than +5 % over the baseline fails.

The counting itself runs under valgrind in ``make cost``; here the rule alone, on given figures.
"""

from __future__ import annotations

from benchmarks import cost_gate

CALL = "tools/call, in-process, mcp 2.x, processor on"
REFERENCE = "rfc8785 recipe, same catalog (reference, not gated)"


def test_within_five_percent_passes_and_beyond_fails() -> None:
    baseline = {CALL: 1_000_000.0}
    assert cost_gate.verdict({CALL: 1_049_000.0}, baseline)[0]
    ok, lines = cost_gate.verdict({CALL: 1_100_000.0}, baseline)
    assert not ok
    assert lines[1].split()[-2:] == ["+10.0%", "FAIL"]


def test_a_gated_metric_without_a_baseline_fails_and_the_reference_is_never_gated() -> None:
    assert not cost_gate.verdict({CALL: 1.0}, {})[0]
    assert cost_gate.verdict({REFERENCE: 2.0}, {REFERENCE: 1.0})[0]


def test_the_baseline_names_every_metric() -> None:
    import json

    baseline = json.loads(cost_gate.BASELINE.read_text(encoding="utf-8"))
    assert set(baseline) == set(cost_gate.METRICS)
