"""Running verifiers: never raise, never block the caller past the timeout, never hold up exit
for longer than :data:`EXIT_GRACE_S`, and never let hung verifiers stop the others."""

from __future__ import annotations

import atexit
import collections
import heapq
import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Final

from otel_mcp_health.core.reasons import ReceiptReason
from otel_mcp_health.core.vocabulary import OutcomeResult
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
#: A verifier whose runs have left this many worker threads hung past their deadline is broken:
#: its calls get ``inconclusive`` / ``verifier_broken`` receipts at once, without running it,
#: until one of those threads returns (one warning says so). So hung verifiers cost at most this
#: many threads each, on top of the pool, and never stop the others
#: (docs/outcomes.md#hung-verifiers).
MAX_ABANDONED: Final = 4
#: The deadline thread sleeps this long at most before it looks at the heap again: a timeout
#: longer than a thread can wait (``1e10``, ``inf``) raised ``OverflowError`` and ended it.
_MAX_SLEEP_S: Final = 3600.0


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
            OutcomeResult.INCONCLUSIVE,
            verifier.method,
            confidence=None,
            reason=ReceiptReason.RAISED,
        )


def _type_name(exc: BaseException) -> str:
    kind = type(exc)
    return f"{kind.__module__}.{kind.__qualname__}"


ReceiptCallback = Callable[[Receipt, float], None]


class _Job:
    """One submission: delivers exactly one receipt (the verifier's, or an inconclusive one)."""

    __slots__ = (
        "_callback",
        "_done",
        "_guard",
        "_runner",
        "_started",
        "call",
        "verifier",
        "worker",
    )

    def __init__(
        self, runner: VerifierRunner, verifier: Verifier, call: CallContext, cb: ReceiptCallback
    ) -> None:
        self._runner, self.verifier, self._callback = runner, verifier, cb
        self.call: CallContext | None = call
        self._started = time.perf_counter()
        self._guard = threading.Lock()
        self._done = False
        #: The worker running the verifier, while it does (set and cleared under the runner's lock).
        self.worker: _Worker | None = None

    @property
    def done(self) -> bool:
        return self._done

    def run(self) -> None:
        call = self.call
        if call is not None and not self._done:  # expired while queued: nobody waits for it
            self.deliver(run_verifier(self.verifier, call))

    def expire(self, reason: str = ReceiptReason.TIMEOUT) -> None:
        """Deliver an ``inconclusive`` receipt now; the worker still running it is abandoned."""
        if self.deliver(Receipt(OutcomeResult.INCONCLUSIVE, self.verifier.method, None, reason)):
            self._runner._expired(self)  # noqa: SLF001 - the runner's own job reports back to it

    def deliver(self, receipt: Receipt) -> bool:
        """Hand ``receipt`` to the callback unless one was delivered already (then ``False``)."""
        with self._guard:
            if self._done:
                return False  # a late answer after the timeout: dropped
            self._done = True
        self.call = None  # the arguments and result: not kept while the deadline heap holds it
        try:
            self._callback(receipt, time.perf_counter() - self._started)
        except BaseException as exc:  # noqa: BLE001 - our own callback: the worker must survive
            _logger.debug("mcp_health: receipt callback raised %s", _type_name(exc))
        finally:
            self._runner._delivered(self)  # noqa: SLF001 - the runner's own worker reports back to it
        return True


class _Worker:
    """A worker thread and the job it runs; ``abandoned`` once that job's deadline passed."""

    __slots__ = ("abandoned", "job", "thread")

    def __init__(self) -> None:
        self.job: _Job | None = None
        self.abandoned = False
        self.thread: threading.Thread | None = None


class _Deadlines:
    """One daemon timer thread for every submission's deadline (not a thread per submission).

    Deadlines wait in a heap; the thread sleeps until the earliest and expires each job that has
    not answered by then. A job that answered stays in the heap until its deadline, then is
    dropped: the heap holds at most the submissions of the last ``timeout`` seconds.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Job]] = []
        self._order = itertools.count()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, job: _Job, timeout: float) -> None:
        with self._changed:
            heapq.heappush(self._heap, (time.monotonic() + timeout, next(self._order), job))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="mcp-health-verifier-deadlines", daemon=True
                )
                self._thread.start()
            self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    wait = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._changed.wait(None if wait is None else min(wait, _MAX_SLEEP_S))
                _, _, job = heapq.heappop(self._heap)
            if not job.done:
                job.expire()


class VerifierRunner:
    """A small pool of daemon worker threads that delivers exactly one receipt per submission.

    :meth:`submit` returns at once. The callback gets the receipt and the verifier's duration in
    seconds, from a worker thread, or from the runner's one deadline thread with an
    ``inconclusive`` / ``verifier_timeout`` receipt when the verifier has not answered within its
    timeout (a late answer is dropped).

    A slow or hung verifier never stops the others: one verifier runs on all but one of the
    workers at most (its other calls wait for one of its runs to end, their deadlines running),
    and the worker still running it past its deadline is abandoned and replaced at once. A
    verifier that has :data:`MAX_ABANDONED` threads hung is broken (one warning): its calls are
    answered ``inconclusive`` / ``verifier_broken`` without running it until one of them
    returns, so it holds at most :data:`MAX_ABANDONED` plus the pool size minus one threads (runs
    already started when it broke may hang too).

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
        self._workers: list[_Worker] = []
        self._idle = threading.Condition()
        self._open: set[_Job] = set()
        self._deadlines = _Deadlines()
        #: Per verifier (by identity): the verifier and how many of its threads hang.
        self._hung: dict[int, tuple[Verifier, int]] = {}
        self._warned: set[int] = set()
        #: Per verifier (by identity): its runs on pool workers, and its calls waiting for one of
        #: them to end (at most :attr:`_share` run at once, so it never takes the whole pool).
        self._running: dict[int, int] = {}
        self._waiting: dict[int, collections.deque[_Job]] = {}
        self._started = 0

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every submitted receipt was delivered; ``False`` if ``timeout`` ran out."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._open, timeout=timeout)

    def hung(self) -> int:
        """How many abandoned worker threads are still running a verifier past its deadline."""
        with self._idle:
            return sum(count for _, count in self._hung.values())

    def submit(self, verifier: Verifier, call: CallContext, callback: ReceiptCallback) -> None:
        """Run ``verifier`` on ``call`` in the background and hand its receipt to ``callback``."""
        job = _Job(self, verifier, call, callback)
        with self._idle:
            self._open.add(job)
            closed = self._closed
            broken = self._broken(verifier)
            if not closed and not broken and len(self._workers) < self._max_workers:
                self._start_worker()
        if closed:  # shut down: answer now, inconclusive
            job.expire(ReceiptReason.RAISED)
            return
        if broken:
            job.expire(ReceiptReason.BROKEN)
            return
        self._deadlines.add(job, verifier.timeout)
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
        """Start one worker (the caller holds ``self._idle``)."""
        worker = _Worker()
        worker.thread = threading.Thread(
            target=self._work,
            args=(worker,),
            name=f"mcp-health-verifier-{self._started}",
            daemon=True,
        )
        self._started += 1
        self._workers.append(worker)
        worker.thread.start()

    @property
    def _share(self) -> int:
        """How many workers one verifier may run on at once: all but one."""
        return max(1, self._max_workers - 1)

    def _work(self, worker: _Worker) -> None:
        while (job := self._jobs.get()) is not None:
            key = id(job.verifier)
            with self._idle:
                broken = self._broken(job.verifier)
                waits = not broken and self._running.get(key, 0) >= self._share
                if waits:  # its verifier runs on its share of the pool: after one of those
                    self._wait(key, job)
                elif not broken:
                    worker.job, job.worker = job, worker
                    self._running[key] = self._running.get(key, 0) + 1
            if waits:
                continue
            if broken:  # it broke while this job was queued: do not start it
                job.expire(ReceiptReason.BROKEN)
                continue
            job.run()
            with self._idle:
                worker.job = job.worker = None
                if worker.abandoned:  # its replacement took its place: leave the pool
                    self._returned(job.verifier)
                    return
                self._ended(key)

    def _wait(self, key: int, job: _Job) -> None:
        """Hold ``job`` until a run of its verifier ends (the caller holds ``self._idle``)."""
        waiting = self._waiting.setdefault(key, collections.deque())
        while waiting and waiting[0].done:  # expired while waiting: nobody waits for them
            waiting.popleft()
        waiting.append(job)

    def _ended(self, key: int) -> None:
        """A run of verifier ``key`` ended or was abandoned: its next waiting call may run
        (the caller holds ``self._idle``)."""
        running = self._running.get(key, 0) - 1
        if running > 0:
            self._running[key] = running
        else:
            self._running.pop(key, None)
        waiting = self._waiting.get(key)
        while waiting and not self._closed:  # closed: its calls are answered, never started
            job = waiting.popleft()
            if not job.done:
                self._jobs.put(job)
                break
        if waiting is not None and not waiting:
            del self._waiting[key]

    def _expired(self, job: _Job) -> None:
        """A job's deadline passed: abandon the worker still running it and start another."""
        with self._idle:
            worker = job.worker
            if worker is None or worker.abandoned or worker.job is not job:
                return  # still queued (it will not run), or already back
            worker.abandoned = True
            self._workers.remove(worker)
            key = id(job.verifier)
            self._ended(key)
            count = self._hung.get(key, (job.verifier, 0))[1] + 1
            self._hung[key] = (job.verifier, count)
            if not self._closed:
                self._start_worker()
            # At exit (closed) every outstanding job expires: no run is "hung" for later calls.
            warn = count >= MAX_ABANDONED and key not in self._warned and not self._closed
            if warn:
                self._warned.add(key)
        if warn:
            _logger.warning(
                "mcp_health: outcome verifier %r has %d threads hung past its timeout; its calls "
                "read unverified (verifier_broken) until one returns",
                job.verifier.method,
                count,
            )

    def _broken(self, verifier: Verifier) -> bool:
        """Whether ``verifier`` has :data:`MAX_ABANDONED` threads hung (caller holds the lock)."""
        return self._hung.get(id(verifier), (verifier, 0))[1] >= MAX_ABANDONED

    def _returned(self, verifier: Verifier) -> None:
        """An abandoned worker's verifier returned at last (the caller holds ``self._idle``)."""
        key = id(verifier)
        count = self._hung[key][1] - 1
        if count:
            self._hung[key] = (verifier, count)
        else:
            del self._hung[key]

    def _delivered(self, job: _Job) -> None:
        with self._idle:
            self._open.discard(job)
            self._idle.notify_all()
