"""`make bench` leaves the tree clean: results go to an ignored folder, published on purpose."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


def _git(*args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False, timeout=30
    )
    return proc.stdout


def test_results_folder_is_ignored_and_published_results_are_tracked() -> None:
    assert _git("check-ignore", "benchmarks/.results/digest.md").strip()
    tracked = _git("ls-files", "benchmarks/results").split()
    assert {"benchmarks/results/digest.md", "benchmarks/results/calls.md"} <= set(tracked)


def test_a_report_lands_in_the_ignored_folder_and_the_tree_stays_clean() -> None:
    before = _git("status", "--porcelain", "--untracked-files=all")
    code = (
        "import _common; "  # ``-c`` puts the working directory, benchmarks/, on sys.path
        "r = _common.Report('probe', 'test-probe'); r.add('- x'); print(r.write())"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=BENCH,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    written = Path(proc.stdout.strip().splitlines()[-1])
    try:
        assert written.parent == BENCH / ".results"
        assert "load average at start" in written.read_text(encoding="utf-8")
        assert _git("status", "--porcelain", "--untracked-files=all") == before
    finally:
        written.unlink(missing_ok=True)


def test_only_the_shared_report_writes_files() -> None:
    """Every benchmark writes through ``_common.Report`` (so into the ignored folder); the cost
    gate rewrites its committed baseline, on purpose, only when told (``make cost-baseline``,
    ``--raise-baseline``)."""
    writers = [
        path.name
        for path in sorted(BENCH.glob("*.py"))
        if re.search(r"\.write_(text|bytes)\(|open\([^)]*['\"]w", path.read_text(encoding="utf-8"))
    ]
    assert writers == ["_common.py", "cost_gate.py"]
    gate = (BENCH / "cost_gate.py").read_text(encoding="utf-8")
    assert gate.count(".write_text(") == 1
    assert "    writing = args.write_baseline or args.raise_baseline\n" in gate
    assert "    if writing:\n        plan = rewrite(" in gate


def test_make_bench_publish_copies_on_purpose() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    bench = makefile.split("\nbench:", 1)[1].split("\n\n", 1)[0]
    assert "results/" not in bench.replace(".results/", "")
    assert "cp benchmarks/.results/*.md benchmarks/results/" in makefile
