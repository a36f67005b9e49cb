"""Verification survives hung verifiers (issue 26).

Through the real instrumented ``mcp.Client`` and the process's real verifier runner: five calls
whose verifier never returns, then a call whose verifier passes. The hung workers are abandoned
and replaced, so the sixth call is still ``healthy``; the hung verifier is marked broken once it
holds ``MAX_ABANDONED`` threads (one warning), later calls of it are answered at once; deadlines
are kept by one timer thread, never a ``threading.Timer`` per submission.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client
from tests.support.processor_helpers import Pipeline
from tests.verifiers.delivery_server import TOOL, build_server

from otel_mcp_health import attributes as A
from otel_mcp_health import flush_receipts, register_verifier
from otel_mcp_health.core.vocabulary import OutcomeResult
from otel_mcp_health.verifiers import CallContext, Receipt, Verifier, VerifierRunner

#: The runner's bound, as documented (docs/outcomes.md#hung-verifiers).
MAX_ABANDONED = 4
POOL = 4


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Lets the hung verifiers return at the end, so their threads do not outlive the test."""
    event = threading.Event()
    yield event
    event.set()


def verifier_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcp-health-verifier")]


@pytest.mark.anyio
async def test_five_hung_verifiers_then_a_passing_one_still_passes(
    instrumented: Pipeline, release: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    def hang(call: Any) -> bool:
        release.wait(60)
        return True

    register_verifier(TOOL, hang, timeout=0.2)
    with caplog.at_level(logging.WARNING):
        async with Client(build_server()) as client:
            await client.list_tools()
            for _ in range(5):
                await client.call_tool(TOOL, {})
                assert await anyio.to_thread.run_sync(flush_receipts, 5.0)
            threads = verifier_threads()
            timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
            register_verifier(TOOL, lambda call: True, timeout=2.0)
            await client.call_tool(TOOL, {})
            assert await anyio.to_thread.run_sync(flush_receipts, 5.0)
    calls = [dict(s.attributes or {}) for s in instrumented.named(f"tools/call {TOOL}")]
    assert (calls[5][A.OUTCOME_RESULT], calls[5][A.VERDICT]) == ("passed", "healthy")
    assert [c[A.OUTCOME_REASON] for c in calls[:5]] == [
        "verifier_timeout",
        "verifier_timeout",
        "verifier_timeout",
        "verifier_timeout",
        "verifier_broken",  # broken after MAX_ABANDONED hung threads: answered at once
    ]
    assert timers == []  # one deadline thread, not a timer per submission
    # the hung threads, a full pool beside them, and the one deadline thread; no more
    assert len(threads) <= MAX_ABANDONED + POOL + 1, [t.name for t in threads]
    warnings = [r for r in caplog.records if "verifier_broken" in r.getMessage()]
    assert len(warnings) == 1


def test_a_broken_verifier_runs_again_once_its_threads_return(release: threading.Event) -> None:
    runner = VerifierRunner(max_workers=1)
    got: list[Receipt] = []

    def hang(call: CallContext) -> bool:
        release.wait(60)
        return True

    hung = Verifier(hang, "hangs", 0.1)
    for _ in range(MAX_ABANDONED + 1):
        runner.submit(hung, CallContext(tool="t", arguments={}), lambda r, d: got.append(r))
        assert runner.wait_idle(5.0)
    assert [r.reason for r in got] == ["verifier_timeout"] * MAX_ABANDONED + ["verifier_broken"]
    assert runner.hung() == MAX_ABANDONED
    release.set()
    deadline = time.monotonic() + 5.0
    while runner.hung() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert runner.hung() == 0
    runner.submit(hung, CallContext(tool="t", arguments={}), lambda r, d: got.append(r))
    assert runner.wait_idle(5.0)
    assert got[-1].result is OutcomeResult.PASSED
    runner.shutdown()


@pytest.mark.anyio
async def test_slow_calls_of_one_verifier_never_take_the_whole_pool(
    instrumented: Pipeline, release: threading.Event
) -> None:
    """Four calls whose verifier is slow (still within its timeout) leave a worker for another
    verifier: a prompt-injected agent cannot make a later call read ``unverified``
    (``verifier_timeout``) by first calling a slow tool four times."""
    ran = threading.Event()

    def slow(call: Any) -> bool:
        release.wait(60)
        return False

    def fast(call: Any) -> bool:
        ran.set()
        return True

    register_verifier(TOOL, slow, timeout=10.0)
    async with Client(build_server()) as client:
        await client.list_tools()
        for _ in range(POOL):
            await client.call_tool(TOOL, {})
        register_verifier(TOOL, fast, timeout=1.0)
        await client.call_tool(TOOL, {})
        await anyio.to_thread.run_sync(ran.wait, 5.0)
        release.set()
        assert await anyio.to_thread.run_sync(flush_receipts, 5.0)
    calls = [dict(s.attributes or {}) for s in instrumented.named(f"tools/call {TOOL}")]
    verdicts = sorted((c[A.OUTCOME_RESULT], c[A.VERDICT]) for c in calls)
    assert verdicts == [("failed", "false_success")] * POOL + [("passed", "healthy")]


def test_the_exit_hook_neither_warns_nor_starts_waiting_runs(
    release: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    """At exit the receipts still outstanding are delivered ``verifier_timeout``, with no
    ``verifier_broken`` warning (its "until one returns" means nothing then), and a call waiting
    for a run of its verifier to end is answered, never started."""
    workers = MAX_ABANDONED + 2  # its share of the pool, all but one, holds MAX_ABANDONED + 1
    runner = VerifierRunner(max_workers=workers)
    started: list[int] = []
    got: list[Receipt] = []

    def slow(call: CallContext) -> bool:
        started.append(1)
        release.wait(60)
        return True

    verifier = Verifier(slow, "slow", 600.0)
    for _ in range(workers + 2):
        runner.submit(verifier, CallContext(tool="t", arguments={}), lambda r, d: got.append(r))
    deadline = time.monotonic() + 5.0
    while len(started) < workers - 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    with caplog.at_level(logging.WARNING):
        runner.abandon(grace=0.1)
    time.sleep(0.2)
    assert [r.reason for r in got] == ["verifier_timeout"] * (workers + 2)
    assert len(started) == workers - 1  # the calls waiting for a worker never started
    assert not [r for r in caplog.records if "verifier_broken" in r.getMessage()]
    runner.shutdown()


@pytest.mark.parametrize("long", [1e10, float("inf")])
def test_a_very_long_timeout_never_stops_the_deadlines(
    release: threading.Event, long: float
) -> None:
    """A timeout longer than a thread can wait (a policy accepts ``timeout = 1e10``; code may
    pass ``inf``) once stopped the one deadline thread: no later verifier ever timed out."""
    runner = VerifierRunner()
    got: list[Receipt] = []

    def hang(call: CallContext) -> bool:
        release.wait(60)
        return True

    patient = Verifier(lambda call: True, "patient", long)
    runner.submit(patient, CallContext(tool="t", arguments={}), lambda r, d: got.append(r))
    time.sleep(0.1)  # its deadline is the only one: the deadline thread waits for it
    hung = Verifier(hang, "hangs", 0.2)
    runner.submit(hung, CallContext(tool="t", arguments={}), lambda r, d: got.append(r))
    assert runner.wait_idle(5.0)
    assert [r.reason for r in got] == [None, "verifier_timeout"]
    runner.shutdown()
