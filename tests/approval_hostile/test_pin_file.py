"""The host comes first whatever the pin file is.

Each load runs in a subprocess under a memory cap and a timeout, the way a zero-code agent reads
``OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG`` at start-up.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from otel_mcp_health.instrumentation import _approval
t = time.monotonic()
pins = _approval.load(sys.argv[1])
# VmHWM: this process's own peak; ru_maxrss would carry the forking test runner's peak.
with open("/proc/self/status") as status:
    rss = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) // 1024
print(pins.file is None, round(time.monotonic() - t, 2), rss)
"""


def load(path: str, timeout: float = 20) -> tuple[bool, float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, path],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading the pin file {path} blocked the host for {timeout} s")
    failed, seconds, rss = done.stdout.split()
    return failed == "True", float(seconds), int(rss), done.stderr


def test_a_fifo_as_pin_file_does_not_block_start_up(tmp_path: Path) -> None:
    fifo = tmp_path / "approved.toml"
    os.mkfifo(fifo)
    failed, _, _, stderr = load(str(fifo))
    assert failed
    assert stderr.count("ApprovedCatalogWarning") == 1


def test_dev_zero_as_pin_file_does_not_eat_the_hosts_memory() -> None:
    failed, seconds, rss, stderr = load("/dev/zero")
    assert failed
    assert stderr.count("ApprovedCatalogWarning") == 1
    assert rss < 300, f"{rss} MB peak to refuse /dev/zero ({seconds} s)"


def test_a_huge_pin_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """100 MB (valid TOML: the header and comments): refused unread, not parsed whole."""
    huge = tmp_path / "approved.toml"
    with huge.open("w") as handle:
        handle.write('format = "otel-mcp-health/pins/1"\nprojection = "v1"\n')
        line = "# " + "x" * 98 + "\n"
        for _ in range(1_000_000):
            handle.write(line)
    failed, seconds, rss, _ = load(str(huge), timeout=60)
    assert failed, "a 100 MB pin file was accepted"
    shown = f"{huge.stat().st_size} bytes: {seconds} s, {rss} MB"
    assert seconds < 0.5, shown
    assert rss < 160, shown  # the interpreter and the package: ~110 MB
