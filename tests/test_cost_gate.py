"""The cost gate's verdict (benchmarks/cost_gate.py): more than +5 % over the baseline fails.

The counting itself runs under valgrind in ``make cost``; here the rule alone, on given figures.
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
