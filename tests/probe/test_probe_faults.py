"""A fault of the prober's own: the scraper gets a 500 at once, the prober keeps serving, one
warning names the exception class only."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.probe.conftest import get, running, series, stdio_command

from otel_mcp_health.probe import _one_probe

LEAKED = "canary-fault-message-90b1"


def test_a_fault_of_ours_is_a_500_then_the_prober_keeps_working(
    config_file: Callable[[str], Path],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = config_file(
        '[probe]\nmin_interval = 0.000001\n[module.m]\n[[target]]\nname = "t"\n'
        f'transport = "stdio"\ncommand = {json.dumps(stdio_command())}\n'
    )
    real = _one_probe.report

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(LEAKED)

    caplog.set_level(logging.WARNING)
    with running(path) as (_service, base):
        monkeypatch.setattr(_one_probe, "report", broken)
        first = get(f"{base}/probe?target=t")
        second = get(f"{base}/probe?target=t")
        monkeypatch.setattr(_one_probe, "report", real)
        healthy = get(f"{base}/probe?target=t")
        metrics = series(get(f"{base}/metrics")[1])
    assert (first[0], second[0], healthy[0]) == (500, 500, 200)
    assert series(healthy[1])["probe_success"] == 1
    assert metrics['mcp_health_prober_refused_total{reason="internal_error"}'] == 2
    warnings = [r.getMessage() for r in caplog.records if "internal error" in r.getMessage()]
    assert warnings == ["otel-mcp-health probe: internal error RuntimeError (reported once)"]
    assert LEAKED not in caplog.text + first[1]
