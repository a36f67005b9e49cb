"""Clients that open connections and never finish a request.

Without an idle timeout and a bound on connections, each costs the prober a thread and a file
descriptor, and a few hundred of them lock every scraper out for as long as they are held (with
the 128-descriptor limit a service manager may set; systemd's default soft limit is 1024).
"""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.probe.hostile.conftest import prober

CONFIG = """
[module.default]
timeout = 5
[[target]]
name = "closed"
transport = "streamable_http"
url = "http://127.0.0.1:9/mcp"
"""


def _hold(port: int, count: int) -> list[socket.socket]:
    held: list[socket.socket] = []
    for _ in range(count):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=2)
            sock.sendall(b"GET /probe?target=clo")  # never finished
        except OSError:
            break
        held.append(sock)
    return held


def test_idle_connections_do_not_lock_scrapers_out(write_config: Callable[[str], Path]) -> None:
    with prober(write_config(CONFIG), nofile=128) as base:
        port = int(base.rsplit(":", 1)[1])
        held = _hold(port, 150)
        try:
            time.sleep(1)
            started = time.monotonic()
            try:
                with urllib.request.urlopen(f"{base}/metrics", timeout=30) as answer:
                    status = answer.status
            except (urllib.error.URLError, TimeoutError) as exc:
                status = repr(exc)
            assert status == 200, (status, len(held), time.monotonic() - started)
        finally:
            for sock in held:
                sock.close()


def test_an_unfinished_request_is_dropped_after_a_while(
    write_config: Callable[[str], Path],
) -> None:
    with prober(write_config(CONFIG)) as base:
        sock = socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])))
        sock.sendall(b"GET /probe?target=clo")
        sock.settimeout(30)
        try:
            closed = sock.recv(4096) is not None  # b"" (closed) or a 408 answer
        except TimeoutError:
            closed = False
        finally:
            sock.close()
    assert closed, "the prober kept an unfinished request open for 30 s"
