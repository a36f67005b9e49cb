"""With the collector down, a zero-code program exits no later than under the SDK's configurator.

Both runs are the same program (``tests/processor/zero_code_app.py``) under
``opentelemetry-instrument`` with OTLP/HTTP traces and metrics aimed at a refused port; only
``OTEL_PYTHON_CONFIGURATOR`` differs (``mcp_health`` vs the SDK's ``configurator``). The exit time
is bounded by the exporters' own settings (``OTEL_EXPORTER_OTLP_TIMEOUT``, in seconds in Python;
the retry back-off stops at that deadline), which docs/configuration.md explains; this test uses
2 s to stay short, and compares against the baseline measured in the same run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = "tests.processor.zero_code_app"  # run from ROOT with ``-m``
INSTRUMENT = Path(sys.executable).with_name("opentelemetry-instrument")
TIMEOUT_S = 2


def _refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port  # closed again: nothing listens there


def _exit_time(configurator: str, port: int) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        OTEL_PYTHON_CONFIGURATOR=configurator,
        OTEL_SERVICE_NAME="exit-time-test",
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_METRICS_EXPORTER="otlp",
        OTEL_LOGS_EXPORTER="none",
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
        OTEL_EXPORTER_OTLP_TIMEOUT=str(TIMEOUT_S),
    )
    started = time.monotonic()
    proc = subprocess.run(
        [str(INSTRUMENT), sys.executable, "-m", APP],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=env,
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert "Failed to export spans batch" in proc.stderr  # the collector really was down
    return elapsed


def test_collector_down_exit_time_is_no_worse_than_the_sdk_configurator() -> None:
    port = _refused_port()
    ours, sdk = [], []
    for _ in range(2):  # interleaved, so machine load hits both alike
        sdk.append(_exit_time("configurator", port))
        ours.append(_exit_time("mcp_health", port))
    # Jitter of the exporters' back-off is up to ±20 % of one second here.
    assert min(ours) <= max(sdk) + 1.0, (ours, sdk)
    # And the exporter timeout bounds both: two signals, each ≤ TIMEOUT_S, plus start-up.
    assert max(ours) < 2 * TIMEOUT_S + 8, ours
