"""One scraper's short timeout must not become every scraper's answer.

A scraper (or anyone who can reach the endpoint) sending ``X-Prometheus-Scrape-Timeout-Seconds``
shorter than a healthy server needs gets a timed-out probe; that result must not be served from
the cache to a scraper that allows the probe its full time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.probe.conftest import get, series
from tests.probe.hostile.conftest import prober


def test_a_short_scrape_timeout_does_not_poison_the_cache(
    hostile: str, write_config: Callable[[str], Path]
) -> None:
    config = write_config(f"""
[probe]
min_interval = 60
[module.default]
timeout = 10
[[target]]
name = "slow"
transport = "streamable_http"
url = "{hostile}/slow/mcp"
""")
    with prober(config) as base:
        hurried = series(
            get(f"{base}/probe?target=slow", {"X-Prometheus-Scrape-Timeout-Seconds": "1"})[1]
        )
        patient = series(
            get(f"{base}/probe?target=slow", {"X-Prometheus-Scrape-Timeout-Seconds": "10"})[1]
        )
    assert hurried["probe_success"] == 0  # 2 pages x 1 s do not fit in 0.5 s
    # The patient scraper gets a probe that had its time, not the hurried one's leftovers.
    assert patient["mcp_health_probe_cached"] == 0
    assert patient["probe_success"] == 1
