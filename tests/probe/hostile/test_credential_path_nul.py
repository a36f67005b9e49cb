"""a credential file path the OS cannot even open (an embedded NUL, which TOML's
``\\u0000`` escape produces) must read ``credential_unavailable``, like any unreadable file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.probe.conftest import get, one, series
from tests.probe.hostile.conftest import prober


def test_a_credential_path_with_a_nul_reads_credential_unavailable(
    write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    secret = tmp_path / "token"
    secret.write_text("t0ken\n", encoding="utf-8")
    config = write_config(f"""
[module.default]
timeout = 3
[[target]]
name = "nul"
transport = "streamable_http"
url = "http://127.0.0.1:9/mcp"
[target.headers]
Authorization = {{ file = "{secret}\\u0000x" }}
""")
    with prober(config) as base:
        status, text = get(f"{base}/probe?target=nul")
    assert status == 200, status
    verdict = one(series(text), "mcp_health_probe_verdict")
    assert 'mcp_health_reason="credential_unavailable"' in verdict, verdict
