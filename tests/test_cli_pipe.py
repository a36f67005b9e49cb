"""Every ``otel-mcp-health`` command into a pipe whose reader has gone: quiet, honest exit code.

``classify evidence.jsonl --json | head -1`` is how people look at a large file. When the reader
closes the pipe, the next write fails with EPIPE; the command must not print a traceback, and its
exit code must still be the verdicts' (``0`` green, ``1`` not green), never a crash's ``1`` that
reads as "unhealthy". These tests use real pipes and the real entry point in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT / "tests" / "fixtures" / "seeds"
CHECK_SERVER = ROOT / "tests" / "check" / "check_servers.py"


def _green_evidence(tmp_path: Path, count: int) -> Path:
    """``count`` green catalog records: far more output than a pipe buffers (64 KiB)."""
    line = (SEEDS / "seed000_catalog.jsonl").read_text(encoding="utf-8").splitlines()[0]
    record = json.loads(line)
    path = tmp_path / "green.jsonl"
    rows = [json.dumps({**record, "id": f"{record['id']}-{n}"}) for n in range(count)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _cli(*argv: str) -> list[str]:
    return [sys.executable, "-m", "otel_mcp_health", *argv]


def test_classify_piped_into_head_reads_one_line_and_exits_0_quietly(tmp_path: Path) -> None:
    """``classify --json | head -1``: the reader takes one line and closes the pipe."""
    evidence = _green_evidence(tmp_path, 5000)
    proc = subprocess.Popen(
        _cli("classify", "--json", str(evidence)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    first = json.loads(proc.stdout.readline())
    proc.stdout.close()  # what head does after its first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert first["verdict"] == "converged"
    assert err == ""


def _into_a_closed_pipe(argv: list[str]) -> tuple[int, str]:
    """Run ``argv`` with its standard output on a pipe whose reading end is already closed."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            argv, stdout=write_end, stderr=subprocess.PIPE, check=False, timeout=120
        )
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr.decode()


def _commands(tmp_path: Path) -> dict[str, tuple[list[str], int]]:
    """Each command with the exit code its verdicts (or its success) give."""
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": [{"name": "a", "inputSchema": {}}]}), encoding="utf-8")
    policy = tmp_path / "outcomes.toml"
    policy.write_text('[[outcome]]\ntool = "*"\nverify = "not_required"\n', encoding="utf-8")
    server = ["--", sys.executable, str(CHECK_SERVER), "stdio", "healthy"]
    return {
        "classify green": (_cli("classify", str(_green_evidence(tmp_path, 10))), 0),
        "classify not green": (_cli("classify", str(SEEDS / "seed003_calls.jsonl")), 1),
        "classify summary": (_cli("classify", str(SEEDS / "seed003_calls.jsonl"), "--summary"), 1),
        "digest": (_cli("digest", str(tools)), 0),
        "rules": (_cli("rules"), 0),
        "outcomes": (_cli("outcomes", str(policy)), 0),
        "help": (_cli("--help"), 0),
        "version": (_cli("--version"), 0),
        "check": (_cli("check", *server), 0),
        "check --json": (_cli("check", "--json", *server), 0),
    }


@pytest.mark.parametrize(
    "name",
    [
        "classify green",
        "classify not green",
        "classify summary",
        "digest",
        "rules",
        "outcomes",
        "help",
        "version",
        "check",
        "check --json",
    ],
)
def test_every_command_into_a_closed_pipe_is_quiet(name: str, tmp_path: Path) -> None:
    argv, expected = _commands(tmp_path)[name]
    code, err = _into_a_closed_pipe(argv)
    assert "Traceback" not in err
    assert "BrokenPipeError" not in err
    assert err == ""
    assert code == expected


def test_the_demo_into_a_closed_pipe_is_quiet() -> None:
    pytest.importorskip("mcp")
    code, err = _into_a_closed_pipe(_cli("demo"))
    assert "BrokenPipeError" not in err
    assert "Traceback" not in err
    assert code == 0


def test_both_streams_into_a_closed_pipe_keep_the_input_error_code(tmp_path: Path) -> None:
    """``classify ... 2>&1 | head -1``: bad lines are reported on the closed stderr, quietly, and
    the exit code stays ``2`` (an input error), not a crash's ``1``."""
    good = (SEEDS / "seed000_catalog.jsonl").read_text(encoding="utf-8").splitlines()[0]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join([good, '{"kind": "nope"}'] * 3000) + "\n", encoding="utf-8")
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            _cli("classify", str(mixed)), stdout=write_end, stderr=write_end, check=False
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 2
