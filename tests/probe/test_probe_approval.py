"""A probe with pins: the catalog's approval next to its health (docs/approval.md's verdicts)."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.probe.conftest import get, one, post, running, series

from otel_mcp_health.cli import main


@pytest.fixture
def drift(servers: str) -> Iterator[str]:
    """The drifting server's URL, its catalog as pinned; restored afterwards."""
    post(servers, "/unflip")
    try:
        yield f"{servers}/drift/mcp"
    finally:
        post(servers, "/unflip")


def _config(pins: Path, url: str) -> str:
    return f"""
[probe]
min_interval = 0.000001
pins = "{pins}"

[module.default]
timeout = 15

[[target]]
name = "drift"
transport = "streamable_http"
url = "{url}"
"""


def test_a_catalog_changed_after_pinning_reads_drifted_and_stays_healthy(
    servers: str, drift: str, config_file: Callable[[str], Path], tmp_path: Path
) -> None:
    pins = tmp_path / "pins.toml"
    out, err = io.StringIO(), io.StringIO()
    assert main(["pin", "--pins", str(pins), "--url", drift], out=out, err=err) == 0, err.getvalue()
    path = config_file(_config(pins, drift))
    with running(path) as (_service, base):
        before = series(get(f"{base}/probe?target=drift")[1])
        post(servers, "/flip")
        after = series(get(f"{base}/probe?target=drift")[1])
    approved = one(before, "mcp_health_probe_catalog_approval")
    assert 'mcp_health_catalog_approval="approved"' in approved
    assert 'mcp_health_catalog_approval_reason=""' in approved
    drifted = one(after, "mcp_health_probe_catalog_approval")
    assert 'mcp_health_catalog_approval="drifted"' in drifted
    assert 'mcp_health_catalog_approval_reason="material_change"' in drifted
    # Drift is shown next to health, not instead of it: the server still works.
    assert before["probe_success"] == after["probe_success"] == 1
    digests = [one(f, "mcp_health_probe_catalog_info") for f in (before, after)]
    assert digests[0] != digests[1]  # the digest label moved with the catalog
    assert "now deletes everything" not in str(after)


def test_without_pins_there_is_no_approval_series(
    drift: str, config_file: Callable[[str], Path]
) -> None:
    path = config_file(_config(Path("unused"), drift).replace('pins = "unused"\n', ""))
    with running(path) as (_service, base):
        found = series(get(f"{base}/probe?target=drift")[1])
    assert found["probe_success"] == 1
    assert not [n for n in found if n.startswith("mcp_health_probe_catalog_approval")]
