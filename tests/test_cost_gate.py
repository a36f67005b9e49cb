"""The cost gate's rules (benchmarks/cost_gate.py): more than +5 % over the baseline fails, and
the baseline moves down freely but up only with ``--raise-baseline``.

The counting itself runs under valgrind in ``make cost``; here the rules alone, on given figures.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import replace
from pathlib import Path
from unittest.mock import patch

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


def test_a_rewrite_lowers_freely_and_keeps_a_higher_figure_without_the_flag() -> None:
    stored = {CALL: 1_000_000, REFERENCE: 5_000_000}
    measured = {CALL: 900_000.4, REFERENCE: 5_000_001.0}
    plan = cost_gate.rewrite(measured, stored, allow_raise=False)
    assert plan.figures == {CALL: 900_000, REFERENCE: 5_000_000}
    assert plan.raised == [REFERENCE]
    assert plan.lines == [
        f"{CALL}: lowered 1,000,000 -> 900,000 (-10.0%)",
        (
            f"{REFERENCE}: RAISED 5,000,000 -> 5,000,001 (+0.0%): kept the stored figure, it "
            "only moves down"
        ),
    ]


def test_the_flag_writes_a_higher_figure_and_names_the_old_and_new_ones() -> None:
    stored = {CALL: 1_000_000}
    plan = cost_gate.rewrite({CALL: 1_100_000.0}, stored, allow_raise=True)
    assert plan.figures == {CALL: 1_100_000}
    assert plan.raised == [CALL]
    assert plan.lines == [f"{CALL}: RAISED 1,000,000 -> 1,100,000 (+10.0%)"]


def test_an_unchanged_or_new_figure_is_written_and_no_stored_metric_survives_unmeasured() -> None:
    stored = {CALL: 1_000_000, "a metric no longer measured": 7}
    plan = cost_gate.rewrite({CALL: 1_000_000.2, REFERENCE: 3.0}, stored, allow_raise=False)
    assert plan.figures == {CALL: 1_000_000, REFERENCE: 3}
    assert plan.raised == []
    assert plan.lines == [f"{REFERENCE}: new, 3"]


def test_the_baseline_names_every_metric() -> None:
    import json

    baseline = json.loads(cost_gate.BASELINE.read_text(encoding="utf-8"))
    assert set(baseline) == set(cost_gate.METRICS)


def test_a_missing_mcp_1x_venv_is_built_by_the_matrix_cells_own_install_step(
    tmp_path: Path,
) -> None:
    python = tmp_path / "nox" / cost_gate.MCP_1X_CELL / "bin" / "python"
    names = list(cost_gate.METRICS)
    metrics = {
        name: replace(m, python=python) if m.python == cost_gate.MCP_1X else m
        for name, m in cost_gate.METRICS.items()
    }
    with patch.dict(cost_gate.METRICS, metrics):
        assert cost_gate.provisioning(names, python) == [
            sys.executable,
            "-m",
            "nox",
            "-s",
            "mcp_latest_1x",
            "--install-only",
            "--envdir",
            str(tmp_path / "nox"),
        ]
        assert cost_gate.provisioning([n for n in names if "mcp 1.x" not in n], python) is None
        python.parent.mkdir(parents=True)
        python.touch()
        assert cost_gate.provisioning(names, python) is None


def test_the_cell_it_builds_is_a_session_of_the_noxfile() -> None:
    tree = ast.parse((cost_gate.ROOT / "noxfile.py").read_text(encoding="utf-8"))
    sessions = {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any("nox.session" in ast.unparse(d) for d in node.decorator_list)
    }
    assert cost_gate.MCP_1X_CELL in sessions
