"""The ``probe`` command: a refused configuration, where it binds, and a clean stop."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.probe.conftest import get, series, stdio_command

from otel_mcp_health.cli import main

SECRET = "sk-live-canary-cli-55e0"


def test_a_refused_configuration_exits_2_naming_keys_not_values(
    config_file: Callable[[str], Path],
) -> None:
    path = config_file(
        '[module.m]\n[[target]]\nname = "t"\ntransport = "streamable_http"\n'
        f'url = "https://api.example.com/mcp"\nheaders = {{ Authorization = "Bearer {SECRET}" }}\n'
    )
    out, err = io.StringIO(), io.StringIO()
    assert main(["probe", "--config", str(path)], out=out, err=err) == 2
    assert "target 1, key 'headers'" in err.getvalue()
    assert SECRET not in err.getvalue() + out.getvalue()


def test_the_command_binds_127_0_0_1_answers_and_stops_on_sigterm(
    config_file: Callable[[str], Path],
) -> None:
    command = json.dumps(stdio_command())
    path = config_file(
        '[probe]\nlisten = "127.0.0.1:0"\n[module.m]\n[[target]]\nname = "local"\n'
        f'transport = "stdio"\ncommand = {command}\n'
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "otel_mcp_health", "probe", "--config", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("otel-mcp-health probe: listening on http://127.0.0.1:"), line
        base = line.rsplit(" ", 1)[1]
        status, body = get(f"{base}/probe?target=local")
        assert status == 200
        assert series(body)["probe_success"] == 1
        assert get(f"{base}/elsewhere")[0] == 404
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
