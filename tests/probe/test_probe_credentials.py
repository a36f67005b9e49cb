"""Credentials reach the server by reference only, and never any series, span or log."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.probe.conftest import get, one, post, running, series, server_counts
from tests.probe.probe_servers import TOKEN

ARGUMENT = "canary-probe-argument-81c2d7"


def _config(servers: str, reference: str) -> str:
    return f"""
[module.default]
timeout = 15

[[target]]
name = "secure"
transport = "streamable_http"
url = "{servers}/secure/mcp"
headers = {{ Authorization = {{ {reference}, prefix = "Bearer " }} }}
[target.canary]
tool = "lookup"
arguments = {{ q = "{ARGUMENT}" }}
"""


def test_the_credential_and_the_arguments_appear_nowhere(
    servers: str,
    config_file: Callable[[str], Path],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PROBE_TEST_TOKEN", TOKEN)
    path = config_file(_config(servers, 'env = "PROBE_TEST_TOKEN"'))
    spans = InMemorySpanExporter()
    # What the prober's process logs (warnings and up), and everything of our own loggers. The
    # SDK's and httpx's DEBUG logs quote requests: they are the host's to enable, not ours.
    caplog.set_level(logging.WARNING)
    caplog.set_level(logging.DEBUG, logger="otel_mcp_health")
    with running(path, exporters=[spans]) as (_service, base):
        status, text = get(f"{base}/probe?target=secure")
        _status, metrics = get(f"{base}/metrics")
    assert status == 200
    found = series(text)
    assert found["probe_success"] == 1  # the token was sent: the server let the probe in
    assert 'mcp_health_verdict="healthy"' in one(found, "mcp_health_probe_call_verdict")
    exported = spans.get_finished_spans()
    assert {s.name for s in exported} >= {"mcp_health.probe", "server/discover"}
    dumped = "\n".join(s.to_json() for s in exported)
    out, err = capfd.readouterr()
    for where in (text, metrics, dumped, caplog.text, out, err):
        assert TOKEN not in where
        assert ARGUMENT not in where
        assert "/secure/mcp" not in where  # no URL path either


def test_a_credential_file_works_and_a_missing_reference_sends_nothing(
    servers: str, config_file: Callable[[str], Path], tmp_path: Path
) -> None:
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n", encoding="utf-8")
    path = config_file(
        _config(servers, f'file = "{secret}"')
        + _config(servers, 'env = "PROBE_TEST_UNSET_VARIABLE"')
        .replace('name = "secure"', 'name = "unset"')
        .split("[module.default]\ntimeout = 15\n")[1]
    )
    post(servers, "/reset")
    with running(path) as (_service, base):
        by_file = series(get(f"{base}/probe?target=secure")[1])
        before = server_counts(servers)
        unset = series(get(f"{base}/probe?target=unset")[1])
        after = server_counts(servers)
    assert by_file["probe_success"] == 1
    assert unset["probe_success"] == 0
    verdict = one(unset, "mcp_health_probe_verdict")
    assert 'mcp_health_verdict="unverified"' in verdict
    assert 'mcp_health_reason="credential_unavailable"' in verdict
    assert before == after  # nothing was sent without the credential
    assert not [n for n in unset if n.startswith("mcp_health_probe_requests")]


def test_a_wrong_credential_is_needs_auth(
    servers: str, config_file: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROBE_TEST_TOKEN", "not-the-token")
    path = config_file(_config(servers, 'env = "PROBE_TEST_TOKEN"'))
    with running(path) as (_service, base):
        found = series(get(f"{base}/probe?target=secure")[1])
    session = one(found, "mcp_health_probe_session_verdict")
    assert 'mcp_health_verdict="needs_auth"' in session
    assert 'mcp_health_reason="invalid_token"' in session
