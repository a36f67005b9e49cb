"""The probe answers within the scraper's timeout whatever the target does."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.probe.conftest import get, one, series
from tests.probe.hostile.conftest import HERE, prober


def test_a_stdio_server_that_never_answers_is_bounded_by_the_scrape_timeout(
    write_config: Callable[[str], Path],
) -> None:
    # The server reads requests, never answers and ignores SIGTERM (a wedged process).
    config = write_config(f"""
[module.default]
timeout = 10
[[target]]
name = "wedged"
transport = "stdio"
command = ["{sys.executable}", "{HERE / "hang_stdio.py"}"]
""")
    with prober(config) as base:
        started = time.monotonic()
        status, text = get(
            f"{base}/probe?target=wedged", {"X-Prometheus-Scrape-Timeout-Seconds": "3"}
        )
        took = time.monotonic() - started
    assert status == 200
    assert series(text)["probe_success"] == 0
    assert took < 3.0, f"answered after {took:.1f} s: Prometheus gave up at 3 s"


def test_a_credential_file_that_blocks_is_bounded(
    write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    # A FIFO stands for a secret on a hung mount: reading it never returns.
    fifo = tmp_path / "token"
    os.mkfifo(fifo)
    config = write_config(f"""
[probe]
max_concurrent = 1
[module.default]
timeout = 3
[[target]]
name = "blocked"
transport = "streamable_http"
url = "http://127.0.0.1:9/mcp"
[target.headers]
Authorization = {{ file = "{fifo}" }}
""")
    try:
        with prober(config) as base:
            status, text = get(f"{base}/probe?target=blocked")
            assert status == 200, status
            assert 'mcp_health_reason="credential_unavailable"' in one(
                series(text), "mcp_health_probe_verdict"
            )
    finally:
        # Unblock a reader left behind, so nothing outlives the test.
        threading.Thread(target=lambda: fifo.open("w").close(), daemon=True).start()
