"""Outcome verifiers against real destinations: files, sqlite rows, an HTTP server on 127.0.0.1.

Host safety: a verifier that raises, hangs or returns garbage yields an inconclusive receipt,
on time, and never raises into the caller.
"""

from __future__ import annotations

import hashlib
import http.server
import multiprocessing
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otel_mcp_health.core.vocabulary import OutcomeResult
from otel_mcp_health.verifiers import (
    REASON_GARBAGE,
    REASON_RAISED,
    REASON_TIMEOUT,
    CallContext,
    Receipt,
    Verifier,
    VerifierRunner,
    clear_verifiers,
    file_digest,
    from_callable,
    http_status,
    outcome_not_required,
    register_verifier,
    run_verifier,
    sqlite_row,
    unregister_verifier,
    verifier_for,
)


def ctx(**arguments: object) -> CallContext:
    return CallContext(tool="t", arguments=arguments)


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    clear_verifiers()
    yield
    clear_verifiers()


def test_file_digest(tmp_path: Path) -> None:
    path = tmp_path / "report.txt"
    verifier = file_digest(
        path=lambda c: str(c.arguments["path"]), expected_sha256=lambda c: str(c.arguments["sha"])
    )
    sha = hashlib.sha256(b"quarterly").hexdigest()
    assert verifier(ctx(path=str(path), sha=sha)).reason == "file_absent"
    path.write_bytes(b"draft")
    assert verifier(ctx(path=str(path), sha=sha)).reason == "digest_mismatch"
    path.write_bytes(b"quarterly")
    assert verifier(ctx(path=str(path), sha="sha256:" + sha)).result is OutcomeResult.PASSED
    existence_only = file_digest(path=path)(ctx())
    assert (existence_only.result, existence_only.confidence) == (OutcomeResult.PASSED, 0.8)


def test_sqlite_row_with_version(tmp_path: Path) -> None:
    db = tmp_path / "tickets.db"
    with sqlite3.connect(db) as connection:
        connection.execute("create table tickets (id text primary key, version integer)")
    verifier = sqlite_row(
        connect=lambda: sqlite3.connect(db),
        query="select version from tickets where id = ?",
        params=lambda c: [c.arguments["id"]],
        expected_version=2,
    )
    assert verifier(ctx(id="T-1")).reason == "row_absent"
    with sqlite3.connect(db) as connection:
        connection.execute("insert into tickets values ('T-1', 1)")
    assert verifier(ctx(id="T-1")).reason == "version_mismatch"
    with sqlite3.connect(db) as connection:
        connection.execute("update tickets set version = 2")
    assert verifier(ctx(id="T-1")).result is OutcomeResult.PASSED


class _Handler(http.server.BaseHTTPRequestHandler):
    """``GET /published`` answers 200; any other path 404."""

    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/published" else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_base() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_http_status(http_base: str) -> None:
    assert http_status(url=f"{http_base}/published")(ctx()).result is OutcomeResult.PASSED
    missing = http_status(url=f"{http_base}/draft")(ctx())
    assert (missing.result, missing.reason) == (OutcomeResult.FAILED, "http_404")
    closed = http_status(url="http://127.0.0.1:9/x", timeout=1)(ctx())
    assert (closed.result, closed.reason) == (OutcomeResult.INCONCLUSIVE, "unreachable")
    assert http_status(url="file:///etc/passwd")(ctx()).reason == "unsupported_url"


def test_from_callable_and_coercion() -> None:
    judge = from_callable(lambda c: c.arguments["ok"] is True, method="llm_judge", confidence=0.5)
    passed = judge(ctx(ok=True))
    assert (passed.result, passed.method, passed.confidence) == (
        OutcomeResult.PASSED,
        "llm_judge",
        0.5,
    )
    assert judge(ctx(ok=False)).result is OutcomeResult.FAILED


def _raises(_: CallContext) -> Receipt:
    raise RuntimeError("secret value 4111-1111")


def test_run_verifier_turns_exceptions_and_garbage_into_inconclusive() -> None:
    raised = run_verifier(Verifier(_raises, "callable", 1.0), ctx())
    assert (raised.result, raised.reason) == (OutcomeResult.INCONCLUSIVE, REASON_RAISED)
    garbage = run_verifier(Verifier(lambda _: "yes!", "callable", 1.0), ctx())  # type: ignore[arg-type,return-value]
    assert (garbage.result, garbage.reason) == (OutcomeResult.INCONCLUSIVE, REASON_GARBAGE)
    assert run_verifier(Verifier(lambda _: None, "callable", 1.0), ctx()).passed is None


def test_runner_delivers_one_receipt_and_a_timeout_for_a_hung_verifier() -> None:
    runner = VerifierRunner(max_workers=2)
    release = threading.Event()
    got: list[tuple[Receipt, float]] = []
    done = threading.Event()

    def hang(_: CallContext) -> bool:
        release.wait(10)
        return True

    def callback(receipt: Receipt, duration: float) -> None:
        got.append((receipt, duration))
        done.set()

    started = time.perf_counter()
    runner.submit(Verifier(hang, "callable", 0.2), ctx(), callback)
    assert time.perf_counter() - started < 0.1, "submit must not wait for the verifier"
    assert done.wait(5)
    release.set()
    time.sleep(0.05)  # let the late answer arrive: it must be dropped
    runner.shutdown()
    assert len(got) == 1
    receipt, duration = got[0]
    assert (receipt.result, receipt.reason) == (OutcomeResult.INCONCLUSIVE, REASON_TIMEOUT)
    assert duration >= 0.2


def test_runner_survives_a_failing_callback() -> None:
    runner = VerifierRunner(max_workers=1)
    done = threading.Event()

    def bad_callback(receipt: Receipt, duration: float) -> None:
        done.set()
        raise ValueError("callback bug")

    runner.submit(Verifier(lambda _: True, "callable", 1.0), ctx(), bad_callback)
    assert done.wait(5)
    runner.shutdown()


def test_registry() -> None:
    assert verifier_for("export") is None
    register_verifier("export", file_digest(path="/nonexistent"), timeout=1.5)
    chosen = verifier_for("export")
    assert isinstance(chosen, Verifier)
    assert (chosen.method, chosen.timeout) == ("file_digest", 1.5)
    outcome_not_required("export")
    assert verifier_for("export") == "not_required"
    unregister_verifier("export")
    assert verifier_for("export") is None
    with pytest.raises(ValueError, match="timeout"):
        register_verifier("x", lambda _: True, timeout=0)


def test_runner_abandon_delivers_outstanding_receipts_as_inconclusive() -> None:
    """The exit hook: a receipt still outstanding is delivered now, once, and late answers drop."""
    runner = VerifierRunner(max_workers=1)
    release = threading.Event()
    got: list[Receipt] = []

    def hang(_: CallContext) -> bool:
        release.wait(10)
        return True

    runner.submit(Verifier(hang, "callable", 60.0), ctx(), lambda r, d: got.append(r))
    runner.submit(Verifier(lambda _: True, "queued", 60.0), ctx(), lambda r, d: got.append(r))
    assert not runner.wait_idle(0.1)
    runner.abandon(grace=0.1)
    assert runner.wait_idle(1.0)
    release.set()
    time.sleep(0.05)
    assert sorted((r.method, r.result, r.reason) for r in got) == [
        ("callable", OutcomeResult.INCONCLUSIVE, REASON_TIMEOUT),
        ("queued", OutcomeResult.INCONCLUSIVE, REASON_TIMEOUT),
    ]
    runner.shutdown()


def test_runner_abandon_waits_for_a_receipt_that_arrives_within_the_grace() -> None:
    """A program that exits right after its last call keeps a verifier that answers in time."""
    runner = VerifierRunner(max_workers=1)
    got: list[Receipt] = []

    def slow(_: CallContext) -> bool:
        time.sleep(0.2)
        return True

    runner.submit(Verifier(slow, "callable", 60.0), ctx(), lambda r, d: got.append(r))
    runner.abandon()  # the exit hook, with its default grace
    assert [(r.method, r.result) for r in got] == [("callable", OutcomeResult.PASSED)]
    runner.shutdown()


def test_runner_after_shutdown_answers_at_once() -> None:
    runner = VerifierRunner(max_workers=1)
    runner.shutdown()
    got: list[Receipt] = []
    runner.submit(Verifier(lambda _: True, "callable", 5.0), ctx(), lambda r, d: got.append(r))
    assert [(r.result, r.reason) for r in got] == [(OutcomeResult.INCONCLUSIVE, REASON_RAISED)]
    assert runner.wait_idle(0.1)


def test_runner_workers_are_daemon_threads() -> None:
    runner = VerifierRunner(max_workers=2)
    done = threading.Event()
    runner.submit(Verifier(lambda _: True, "callable", 5.0), ctx(), lambda r, d: done.set())
    assert done.wait(5)
    workers = [t for t in threading.enumerate() if t.name.startswith("mcp-health-verifier")]
    assert workers
    assert all(t.daemon for t in workers)
    runner.shutdown()


def _submit_in_child(runner: VerifierRunner, conn: Any) -> None:
    got: list[Receipt] = []
    runner.submit(Verifier(lambda _: True, "callable", 5.0), ctx(), lambda r, d: got.append(r))
    conn.send((runner.wait_idle(5.0), [r.result.value for r in got]))


def test_runner_works_in_a_forked_child() -> None:
    """The child inherits the runner but none of its threads: it must start its own workers."""
    runner = VerifierRunner(max_workers=1)
    done = threading.Event()
    runner.submit(Verifier(lambda _: True, "callable", 5.0), ctx(), lambda r, d: done.set())
    assert done.wait(5)
    fork = multiprocessing.get_context("fork")
    parent, child = fork.Pipe()
    process = fork.Process(target=_submit_in_child, args=(runner, child))
    process.start()
    assert parent.poll(20)
    assert parent.recv() == (True, ["passed"])
    process.join(10)
    runner.shutdown()
