"""The Prometheus text of a probe: hostile label values stay one well-formed, bounded line."""

from __future__ import annotations

import pytest

from otel_mcp_health.core.bounds import MAX_NAME_LENGTH
from otel_mcp_health.probe._endpoint import scrape_bound
from otel_mcp_health.probe._render import FAMILIES, exposition, samples

HOSTILE = 'evil"} 1\nprobe_success{x="' + "y" * 500


def _report(server_name: str) -> dict[str, object]:
    return {
        "verdict": "converged",
        "reason": "ok",
        "nextAction": "none",
        "success": True,
        "sessionVerdict": ("converged", "ok"),
        "session": {"serverName": server_name, "protocolVersion": "2026-07-28"},
        "catalog": {"verdict": "converged", "reason": "ok", "toolCount": 1, "pages": 1},
    }


def test_a_hostile_server_name_is_escaped_and_capped() -> None:
    found = samples(
        _report(HOSTILE),
        duration_s=0.5,
        phases={"handshake": 0.1},
        requests={"server/discover": 1},
        approval=None,
        cached=False,
        age_s=0.0,
    )
    text = exposition(found, FAMILIES)
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert sum(line.startswith("probe_success") for line in lines) == 1
    info = next(line for line in lines if line.startswith("mcp_health_probe_catalog_info"))
    value = info.split('mcp_health_server_name="', 1)[1].rsplit('"', 1)[0]
    assert "\n" not in info
    assert len(value) <= MAX_NAME_LENGTH + value.count("\\")
    assert info.endswith(" 1")


@pytest.mark.parametrize(
    ("header", "bound"),
    [("10", 9.5), ("0.4", 0.1), ("nan", None), ("-3", None), ("x", None), (None, None)],
)
def test_the_scrape_timeout_header_leaves_a_margin(header: str | None, bound: float | None) -> None:
    assert scrape_bound(header) == bound
