"""The canary's verifier: the probe's own policy decides, even beside the environment's."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.probe.conftest import get, one, series, stdio_command

from otel_mcp_health.environment_variables import OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES
from otel_mcp_health.probe import load_config
from otel_mcp_health.probe._endpoint import serving
from otel_mcp_health.probe._service import ProbeService

UNREACHABLE = '[[outcome]]\ntool = "lookup"\nverify = "http"\nurl = "http://127.0.0.1:9/x"\n'


def _config(verify: str, outcomes: Path | None = None) -> str:
    policy = f'outcomes = "{outcomes}"\n' if outcomes is not None else ""
    return (
        f'[probe]\n{policy}[module.m]\ntimeout = 20\n[[target]]\nname = "t"\n'
        f'transport = "stdio"\ncommand = {json.dumps(stdio_command())}\n'
        f'[target.canary]\ntool = "lookup"\nverify = "{verify}"\n'
    )


def _call(path: Path) -> str:
    """The call verdict of one probe by a service on its own default pipeline."""
    service = ProbeService(load_config(path))
    try:
        with serving(service) as base:
            return one(series(get(f"{base}/probe?target=t")[1]), "mcp_health_probe_call_verdict")
    finally:
        service.close()


def test_not_required_wins_over_the_environment_policy(
    config_file: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_policy = tmp_path / "env-outcomes.toml"
    env_policy.write_text(UNREACHABLE, encoding="utf-8")
    monkeypatch.setenv(OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES, str(env_policy))
    call = _call(config_file(_config("not_required")))
    assert 'mcp_health_verdict="healthy"' in call
    assert 'mcp_health_outcome_method="not_required"' in call


def test_a_policy_canary_is_verified_by_the_probe_policy(
    config_file: Callable[[str], Path], tmp_path: Path
) -> None:
    outcomes = tmp_path / "outcomes.toml"
    outcomes.write_text(UNREACHABLE, encoding="utf-8")
    call = _call(config_file(_config("policy", outcomes)))
    # The tool says it succeeded; the promised effect cannot be confirmed.
    assert 'mcp_health_verdict="healthy"' not in call
    assert 'mcp_health_outcome_method="http_status"' in call
    assert 'mcp_health_verdict="unverified"' in call
