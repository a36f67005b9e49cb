"""No answer of the prober quotes what a client sent: not a method, a request line or a path.

The standard library's own error answers (an unsupported method, a malformed request line) put
the method or the line in the status line and the HTML body; a prober in front of Prometheus must
not reflect a client's bytes (the value may be a token a misconfigured scraper sent)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.probe.hostile.conftest import prober

CONFIG = """
[module.default]
timeout = 5
[[target]]
name = "closed"
transport = "streamable_http"
url = "http://127.0.0.1:9/mcp"
"""
CANARY = "CANARYxq7"


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (f"POST /probe?target={CANARY} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 501),
        (f"{CANARY} /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 501),
        (f"GET /metrics HTTP/9.{CANARY}\r\n\r\n", 400),
        (f"GET /{CANARY} HTTP/1.1\r\nHost: x\r\n\r\n", 404),
    ],
    ids=["post", "unknown-method", "bad-version", "unknown-path"],
)
def test_error_answers_never_echo_the_request(
    write_config: Callable[[str], Path], request_bytes: str, status: int
) -> None:
    with prober(write_config(CONFIG)) as base:
        port = int(base.rsplit(":", 1)[1])
        answer = _raw(port, request_bytes.encode("ascii"))
    # A request line the server cannot parse gets an HTTP/0.9-style answer: the body only.
    assert f"{status}".encode() in answer[:400], answer[:300]
    assert CANARY.encode() not in answer, answer[:300]
