"""Fixtures of the hostile-input probe tests: the hostile servers and a prober subprocess."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.support.served import served

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2] / "src"


@pytest.fixture(scope="session")
def hostile() -> Iterator[str]:
    """``hostile_servers.py`` in its own process; yields its base URL."""
    with served([sys.executable, str(HERE / "hostile_servers.py")]) as url:
        yield url


@contextmanager
def prober(
    config: Path, *, env: dict[str, str] | None = None, nofile: int | None = None
) -> Iterator[str]:
    """``python -m otel_mcp_health probe --config CONFIG`` on an ephemeral port; its base URL."""
    full = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "otel_mcp_health",
            "probe",
            "--config",
            str(config),
            "--listen",
            "127.0.0.1:0",
        ],
        stdout=subprocess.PIPE,
        env=full,
        text=True,
        preexec_fn=limit,  # noqa: PLW1509 - before any thread of the child
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert "listening on http://" in line, line
        yield line.rsplit(" ", 1)[1]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[[str], Path]:
    def write(text: str) -> Path:
        path = tmp_path / "probe.toml"
        path.write_text(text, encoding="utf-8")
        return path

    return write
