"""A hung outcome verifier never holds up the host's exit past the grace (issue 10 problem 1),
and a verifier that answers within it is not lost to a program that exits right after its call.

Each program runs in its own interpreter: the same host program uninstrumented, then instrumented
with a verifier that never returns. The instrumented one must exit about as soon as the plain one,
and the receipt it could not wait for is still delivered, ``inconclusive``, before the spans are
exported at exit. With a verifier that answers after 0.2 s (``slow``), the receipt exported is the
verifier's own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from otel_mcp_health import attributes as A

PROGRAM = Path(__file__).with_name("hung_verifier_program.py")
#: Far above a normal exit (about a second), far below "never": a hang is the failure.
BOUND_S = 20.0


def run(mode: str) -> tuple[float, list[str], list[dict[str, Any]]]:
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, str(PROGRAM), mode],
            capture_output=True,
            text=True,
            timeout=BOUND_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the {mode} program did not exit within {BOUND_S} s")
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    host = [line for line in lines if not line.startswith("SPAN ")]
    spans = [json.loads(line[5:]) for line in lines if line.startswith("SPAN ")]
    return elapsed, host, spans


@pytest.mark.parametrize("mode", ["pending", "expired"])
def test_a_hung_verifier_never_delays_exit(mode: str) -> None:
    plain_s, plain_host, _ = run("plain")
    instrumented_s, host, spans = run(mode)
    assert host[0] == plain_host[0]  # the host saw the same result
    assert instrumented_s < plain_s + 10.0, (plain_s, instrumented_s)
    if mode == "expired":
        assert host[1] == "FLUSHED True"
    call = next(s["attributes"] for s in spans if s["name"] == "tools/call deliver")
    assert (call[A.OUTCOME_RESULT], call[A.OUTCOME_REASON]) == ("inconclusive", "verifier_timeout")
    assert (call[A.VERDICT], call[A.NEXT_ACTION]) == ("unverified", "add_outcome_verifier")


def test_a_verifier_answering_within_the_exit_grace_is_not_lost() -> None:
    plain_s, plain_host, _ = run("plain")
    instrumented_s, host, spans = run("slow")
    assert host[0] == plain_host[0]
    assert instrumented_s < plain_s + 10.0, (plain_s, instrumented_s)
    call = next(s["attributes"] for s in spans if s["name"] == "tools/call deliver")
    assert call[A.OUTCOME_RESULT] == "passed"
    assert call[A.VERDICT] == "healthy"
