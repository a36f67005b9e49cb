"""nothing a client sends is logged, and every request gets an answer. An absolute-form
request target with a bracketed host that is not an IP address makes ``urllib.parse.urlsplit``
raise a ValueError quoting the host: uncaught in ``do_GET``, socketserver prints the traceback
(client bytes included) to the prober's stderr and drops the connection unanswered."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.probe.hostile.conftest import SRC

CONFIG = """
[module.default]
timeout = 5
[[target]]
name = "closed"
transport = "streamable_http"
url = "http://127.0.0.1:9/mcp"
"""
CANARY = "CANARYrt5d"


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(
    "target",
    [
        f"http://[{CANARY}]/probe?target=closed",
        f"http://[v{CANARY}]/metrics",
        f"http://[{CANARY}/metrics",
    ],
    ids=["bracketed-host", "ipvfuture", "unbalanced"],
)
def test_a_malformed_absolute_target_is_answered_and_not_logged(
    write_config: Callable[[str], Path], target: str
) -> None:
    command = [sys.executable, "-m", "otel_mcp_health", "probe", "--config"]
    command += [str(write_config(CONFIG)), "--listen", "127.0.0.1:0"]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().strip().rsplit(":", 1)[1])
        answer = _raw(port, f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode("ascii"))
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=15)
    assert CANARY not in err, err[-400:]
    assert answer.startswith(b"HTTP/1.0 4"), answer[:100]
    assert CANARY.encode() not in answer
