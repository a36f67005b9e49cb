"""``otel-mcp-health probe``: a server that refuses the handshake with a non-auth HTTP error
status (a wrong path's 404) is ``transport_error``, over streamable HTTP as over SSE, and the
probe fails (``probe_success 0``): it was reached and refused, which is neither missing evidence
nor green. Real servers on 127.0.0.1 (unknown paths of the test app answer Starlette's 404)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.probe.conftest import get, one, running, series

_CONFIG = """
[probe]
min_interval = 30

[module.default]
timeout = 15

[module.legacy]
era = "legacy"
timeout = 15
"""


@pytest.mark.parametrize(
    ("transport", "path", "module"),
    [
        ("streamable_http", "/nowhere-5d1e/mcp", "default"),
        ("streamable_http", "/nowhere-5d1e/mcp", "legacy"),
        ("sse", "/nowhere-5d1e/sse", "default"),
    ],
)
def test_a_404_at_the_handshake_is_a_transport_error(
    servers: str, config_file: Callable[[str], Path], transport: str, path: str, module: str
) -> None:
    target = f'\n[[target]]\nname = "t"\ntransport = "{transport}"\nurl = "{servers}{path}"\n'
    with running(config_file(_CONFIG + target)) as (_service, base):
        status, body = get(f"{base}/probe?target=t&module={module}")
    assert status == 200, body
    found = series(body)
    assert found["probe_success"] == 0
    for family in ("mcp_health_probe_session_verdict", "mcp_health_probe_verdict"):
        labels = one(found, family)
        assert 'mcp_health_verdict="transport_error"' in labels
        assert 'mcp_health_call_first_failed_layer="transport"' in labels
    assert "nowhere-5d1e" not in body  # the path is no label
