"""``otel-mcp-health demo``: real servers, real client, real processor, the expected verdicts.

The demo checks its own expectations (exit code 1 on any mismatch); these tests run it in this
process and as a subprocess, make sure every expected verdict is printed, and that no argument
value the demo sent (the canary) reaches the output, although the servers echo arguments in their
results and error messages.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from dataclasses import replace

import pytest

pytest.importorskip("mcp")

from otel_mcp_health.demo import _run, main


def _expected_rows() -> list[tuple[str, str, str]]:
    return [(s.label, span, verdict) for s in _run.SCENARIOS for span, verdict in s.expected]


def _assert_complete_and_private(text: str) -> None:
    lines = text.splitlines()
    for label, span, verdict in _expected_rows():
        assert any(
            line.startswith(label) and f" {span} " in line and f" {verdict} " in line
            for line in lines
        ), (label, span, verdict, text)
    assert "protocol-level success" in text
    assert "verified outcomes" in text
    assert "legend:" in text
    assert _run.CANARY not in text


def test_demo_in_process_gets_every_expected_verdict() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(out, err) == _run.EXIT_OK, out.getvalue() + err.getvalue()
    _assert_complete_and_private(out.getvalue())
    assert _run.CANARY not in err.getvalue()
    assert f"all {len(_run.SCENARIOS)} scenarios got their expected verdicts" in out.getvalue()
    # Every catalog verdict the scenarios can reach is shown, and the rates are seed 003's.
    assert " stale      signal_after_discovery" in out.getvalue()
    assert "calls: 12  protocol-level success: 75.0 % (9/12)" in out.getvalue()
    assert "verified outcomes: 16.7 % (2/12)" in out.getvalue()


def test_demo_as_a_subprocess() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    proc = subprocess.run(
        [sys.executable, "-m", "otel_mcp_health", "demo"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _assert_complete_and_private(proc.stdout)
    assert _run.CANARY not in proc.stderr


def test_a_wrong_expectation_is_reported_loudly_with_exit_code_1(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wrong = replace(_run.HTTP_CLOSED, expected=(("server/discover", "healthy"),))
    scenarios = tuple(wrong if s is _run.HTTP_CLOSED else s for s in _run.SCENARIOS)
    monkeypatch.setattr(_run, "SCENARIOS", scenarios)
    out = io.StringIO()
    assert main(out, io.StringIO()) == _run.EXIT_MISMATCH
    text = out.getvalue()
    assert "DEMO MISMATCH: 1 scenario(s)" in text
    assert f"MISMATCH {wrong.label}: expected [('server/discover', 'healthy')]" in text
    assert "transport_error" in text
    assert "<-- UNEXPECTED" in text


def test_without_the_mcp_sdk_the_demo_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['mcp'] = None; "
        "from otel_mcp_health.cli import main; raise SystemExit(main(['demo']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'otel-mcp-health[instruments]'" in proc.stderr
    assert proc.stdout == ""
