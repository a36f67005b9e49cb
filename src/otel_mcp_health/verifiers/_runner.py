"""Running verifiers: never raise, never block the caller past the timeout, never hold up exit
for longer than :data:`EXIT_GRACE_S`."""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Final

from otel_mcp_health.core.vocabulary import OutcomeResult
from otel_mcp_health.verifiers._reasons import REASON_RAISED, REASON_TIMEOUT
from otel_mcp_health.verifiers._receipts import (
    CallContext,
    Receipt,
    Verifier,
    coerce,
)

_logger = logging.getLogger(__name__)
#: At exit, how long the receipts still outstanding get to arrive before they are delivered
#: ``inconclusive``: a program that exits right after its last call (a zero-code agent cannot
#: call ``flush_receipts``) loses no verifier that answers within it, and a hung verifier holds
#: up the exit by this much at most (docs/outcomes.md#at-exit).
EXIT_GRACE_S: Final = 1.0


def run_verifier(verifier: Verifier, call: CallContext) -> Receipt:
    """Run a verifier in the current thread; anything it raises becomes ``inconclusive``.

    Even a ``BaseException`` (``asyncio.CancelledError``, ``SystemExit``, ``KeyboardInterrupt``,
    ...): the verifier runs on our worker thread, where none of them means "stop the host", and
    swallowing them is what guarantees one receipt per call. Only the exception's type is logged:
    its message may quote the call's arguments.
    """
    try:
        return coerce(verifier.fn(call), verifier.method)
    except BaseException as exc:  # noqa: BLE001 - a verifier is user code: it must never break anything
        _logger.debug("mcp_health: outcome verifier %r raised %s", verifier.method, _type_name(exc))
        return Receipt(
            OutcomeResult.INCONCLUSIVE, verifier.method, confidence=None, reason=REASON_RAISED
        )


def _type_name(exc: BaseException) -> str:
    kind = type(exc)
    return f"{kind.__module__}.{kind.__qualname__}"


ReceiptCallback = Callable[[Receipt, float], None]


class _Job:
    """One submission: delivers exactly one receipt (the verifier's, or an inconclusive one)."""

    __slots__ = ("_callback", "_done", "_guard", "_runner", "_started", "call", "timer", "verifier")

    def __init__(
        self, runner: VerifierRunner, verifier: Verifier, call: CallContext, cb: ReceiptCallback
    ) -> None:
        self._runner, self.verifier, self.call, self._callback = runner, verifier, call, cb
        self._started = time.perf_counter()
        self._guard = threading.Lock()
        self._done = False
        self.timer = threading.Timer(verifier.timeout, self.expire)
        self.timer.daemon = True

    def run(self) -> None:
        if not self._done:  # expired while queued: do not start a verifier nobody waits for
            self.deliver(run_verifier(self.verifier, self.call))

    def expire(self, reason: str = REASON_TIMEOUT) -> None:
        self.deliver(Receipt(OutcomeResult.INCONCLUSIVE, self.verifier.method, None, reason))

    def deliver(self, receipt: Receipt) -> None:
        with self._guard:
            if self._done:
                return  # a late answer after the timeout: dropped
            self._done = True
        self.timer.cancel()
        try:
            self._callback(receipt, time.perf_counter() - self._started)
        except BaseException as exc:  # noqa: BLE001 - our own callback: the worker must survive
            _logger.debug("mcp_health: receipt callback raised %s", _type_name(exc))
        finally:
            self._runner._delivered(self)  # noqa: SLF001 - the runner's own worker reports back to it


class VerifierRunner:
    """A small pool of daemon worker threads that delivers exactly one receipt per submission.

    :meth:`submit` returns at once. The callback gets the receipt and the verifier's duration in
    seconds, from a worker thread, or from a timer thread with an ``inconclusive`` /
    ``verifier_timeout`` receipt when the verifier has not answered within its timeout (the hung
    worker is abandoned; a late answer is dropped).

    The host's exit is held up by :data:`EXIT_GRACE_S` at most: the workers are daemon threads (a
    hung verifier cannot keep the interpreter alive, unlike a ``ThreadPoolExecutor``'s, which are
    joined at exit), and an exit hook waits that long for the receipts still outstanding, then
    delivers the rest as ``inconclusive`` / ``verifier_timeout``, so the spans waiting for them
    end before the tracer provider's own exit hook exports.
    """

    def __init__(self, max_workers: int = 4) -> None:
        self._max_workers = max_workers
        self._closed = False
        self._reset()
        atexit.register(self.abandon)
        # A forked child inherits no threads: it starts its own workers and owes no receipts.
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._idle = threading.Condition()
        self._open: set[_Job] = set()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every submitted receipt was delivered; ``False`` if ``timeout`` ran out."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._open, timeout=timeout)

    def submit(self, verifier: Verifier, call: CallContext, callback: ReceiptCallback) -> None:
        """Run ``verifier`` on ``call`` in the background and hand its receipt to ``callback``."""
        job = _Job(self, verifier, call, callback)
        with self._idle:
            self._open.add(job)
            closed = self._closed
            if not closed and len(self._workers) < self._max_workers:
                self._start_worker()
        if closed:  # shut down: answer now, inconclusive
            job.expire(REASON_RAISED)
            return
        job.timer.start()
        self._jobs.put(job)

    def abandon(self, grace: float = EXIT_GRACE_S) -> None:
        """The exit hook: wait up to ``grace`` seconds for the outstanding receipts (the workers
        keep running until the interpreter finalizes), then deliver the rest as ``inconclusive``.
        Submissions from then on are answered ``inconclusive`` at once."""
        with self._idle:
            self._closed = True
            self._idle.wait_for(lambda: not self._open, timeout=grace)
            jobs = list(self._open)
        for job in jobs:
            job.expire()

    def shutdown(self) -> None:
        """Stop accepting work; running verifiers are not waited for, queued ones never start."""
        atexit.unregister(self.abandon)
        with self._idle:
            self._closed = True
            workers = len(self._workers)
        for _ in range(workers):
            self._jobs.put(None)

    def _start_worker(self) -> None:
        worker = threading.Thread(
            target=self._work, name=f"mcp-health-verifier-{len(self._workers)}", daemon=True
        )
        worker.start()
        self._workers.append(worker)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            job.run()

    def _delivered(self, job: _Job) -> None:
        with self._idle:
            self._open.discard(job)
            self._idle.notify_all()
