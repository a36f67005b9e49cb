"""Credentials by reference stay with their own target, and a malformed one is named."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from tests.probe.conftest import CHECK_SERVERS, get, one, series
from tests.probe.hostile.conftest import prober
from tests.probe.probe_servers import TOKEN

OTHER = "canary-rt-other-target-token-5c1f"


def test_a_stdio_server_does_not_receive_other_targets_credentials(
    servers: str, write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    seen = tmp_path / "env.txt"
    script = f'env > "{seen}"; exec "{sys.executable}" "{CHECK_SERVERS}" stdio healthy'
    config = write_config(
        f"""
[[module.default]]
[[target]]
name = "hosted"
transport = "streamable_http"
url = "{servers}/secure/mcp"
[target.headers]
Authorization = {{ env = "RT_HOSTED_TOKEN", prefix = "Bearer " }}
[[target]]
name = "local"
transport = "stdio"
command = ["sh", "-c", '{script}']
""".replace("[[module.default]]", "[module.default]\ntimeout = 10")
    )
    with prober(config, env={"RT_HOSTED_TOKEN": OTHER}) as base:
        status, text = get(f"{base}/probe?target=local")
    assert status == 200
    assert series(text)["probe_success"] == 1
    # The third-party stdio server sees the hosted target's token (the prober's whole env).
    assert OTHER not in seen.read_text()


def test_a_credential_with_a_trailing_space_is_not_reported_as_an_outage(
    servers: str, write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    secret = tmp_path / "token"
    secret.write_text(TOKEN + " \r\n", encoding="utf-8")  # `echo %TOKEN% > token` on Windows
    config = write_config(f"""
[module.default]
timeout = 10
[[target]]
name = "secure"
transport = "streamable_http"
url = "{servers}/secure/mcp"
[target.headers]
Authorization = {{ file = "{secret}", prefix = "Bearer " }}
""")
    with prober(config) as base:
        session = one(
            series(get(f"{base}/probe?target=secure")[1]), "mcp_health_probe_session_verdict"
        )
    # Today: transport_error / connection_lost (the server is up; the header was unsendable).
    assert 'mcp_health_verdict="transport_error"' not in session, session
