"""The differential: a representative run's exported telemetry is the recorded one, exactly.

``tests/support/differential_run.py`` drives the real ``mcp`` client of the installed SDK line
through every transport, failure and verdict the processor gives, instrumented, in a fresh
process, and prints every exported span, metric point and log record with only the per-run
values masked (``tests/support/differential_dump.py``). This test compares that text with the
golden of the line (``tests/vectors/differential/mcp-<major>.x.txt``), line for line: a change
to a name, a value, a type, an attribute's order, a span's kind, status, parent or events, a
metric's points, fails with the unified diff.

A restructuring must leave the golden untouched. A change that alters exported telemetry on
purpose regenerates the golden of each line and shows the diff in review::

    MCP_HEALTH_DIFFERENTIAL_UPDATE=1 pytest tests/differential                   # mcp 2.x (.venv)
    MCP_HEALTH_DIFFERENTIAL_UPDATE=1 nox -s mcp_latest_1x -- tests/differential  # mcp 1.x

Runs in ``make test`` (mcp 2.x) and in the ``mcp_latest_1x`` cell of the matrix (noxfile.py). It
is not in ``tests/matrix``: the other cells (the oldest releases of each line, wrapt 1.x, the
OpenTelemetry floor) export legitimately different spans, and one golden per line is the point.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.matrix_drivers import MCP_MAJOR

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "vectors" / "differential" / f"mcp-{MCP_MAJOR}.x.txt"
#: Set to ``1`` to record the golden of the installed line instead of comparing with it.
UPDATE = "MCP_HEALTH_DIFFERENTIAL_UPDATE"
#: The first lines of a failing diff shown (the whole of it can run to thousands).
SHOWN = 300


def representative_run() -> str:
    """The dump of one representative run, in a fresh interpreter (instrumentation is global)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.differential_run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def test_exported_telemetry_is_the_recorded_one() -> None:
    actual = representative_run()
    if os.environ.get(UPDATE) == "1":
        GOLDEN.write_text(actual, encoding="utf-8")
    expected = GOLDEN.read_text(encoding="utf-8")
    if actual != expected:
        diff = list(
            difflib.unified_diff(
                expected.splitlines(),
                actual.splitlines(),
                fromfile=str(GOLDEN.relative_to(ROOT)),
                tofile="this run",
                lineterm="",
            )
        )
        shown = "\n".join(diff[:SHOWN])
        more = f"\n... {len(diff) - SHOWN} more diff lines" if len(diff) > SHOWN else ""
        pytest.fail(
            f"exported telemetry differs from the golden ({UPDATE}=1 records it when the change"
            f" is intended):\n{shown}{more}",
            pytrace=False,
        )
