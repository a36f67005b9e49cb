"""SIGTERM while a probe is closing a wedged stdio server leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.probe.conftest import get
from tests.probe.hostile.conftest import HERE, SRC

LISTEN = ("--listen", "127.0.0.1:0")


def _survivors(marker: str) -> list[str]:
    found = subprocess.run(
        ["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True
    )
    return [line for line in found.stdout.splitlines() if marker in line]


def test_sigterm_mid_probe_leaves_no_stdio_server_behind(
    write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    # A copy of the wedged server under a unique name, so the check sees only this test's.
    wedged = tmp_path / f"wedged_{time.monotonic_ns()}.py"
    wedged.write_text((HERE / "hang_stdio.py").read_text())
    config = write_config(f"""
[module.default]
timeout = 3
[[target]]
name = "wedged"
transport = "stdio"
command = ["{sys.executable}", "{wedged}"]
""")
    proc = subprocess.Popen(
        [sys.executable, "-m", "otel_mcp_health", "probe", "--config", str(config), *LISTEN],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        text=True,
    )
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip().rsplit(" ", 1)[1]
        threading.Thread(target=get, args=(f"{base}/probe?target=wedged",), daemon=True).start()
        time.sleep(1.5)  # the server is running and not answering
        assert _survivors(wedged.name)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        time.sleep(0.5)
        assert not _survivors(wedged.name), "the wedged stdio server outlived the prober"
    finally:
        proc.kill()
        for line in _survivors(wedged.name):
            subprocess.run(["kill", "-9", line.split()[0]], check=False)
