"""Outcome verifiers: receipts that the promised artefact exists (docs/model.md#layers, outcome).

A green ``tools/call`` is not delivered work. An **outcome verifier** is chosen *before* the call
(registered per tool name), runs in-process *after* a call that returned, may read the call's
arguments and result in memory, and returns a :class:`Receipt`: ``passed``, ``failed`` or
``inconclusive``, with the method and a confidence. Only the receipt's method, result, confidence
and duration are exported; the arguments and the result never leave the process.

Usage::

    import otel_mcp_health as omh

    # A file the tool promised to write must exist with the expected content digest.
    omh.register_verifier(
        "export_report",
        omh.file_digest(path=lambda call: call.arguments["path"],
                        expected_sha256=lambda call: call.structured["sha256"]),
        timeout=2.0,
    )
    # A read-only lookup needs no receipt: say so explicitly (recorded as ``not_required``).
    omh.outcome_not_required("search_tickets")

Built-in verifiers: :func:`file_digest`, :func:`sqlite_row` (any DB-API connection factory),
:func:`http_status` (HTTP GET) and :func:`from_callable` (any user function). A verifier that
raises (anything, even a ``BaseException``), hangs past its timeout, returns garbage or a malformed
receipt gives an ``inconclusive`` receipt with a reason code, and never affects the call: verifiers
run on a small pool of daemon threads, the host's call returns first, a timer delivers the
``inconclusive`` receipt when a verifier hangs, and a hung verifier never delays the host's exit.
Logs name only the exception's type: its message may quote what the verifier read.

No verifier → the outcome layer stays ``unobserved`` and the call is at best ``unverified``.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import queue
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeAlias, TypeVar

from otel_mcp_health.core.vocabulary import OUTCOME_NOT_REQUIRED, OutcomeResult

_logger = logging.getLogger(__name__)
_T = TypeVar("_T")

DEFAULT_TIMEOUT_S: Final = 5.0
#: Reason codes of inconclusive receipts produced by the runner itself.
REASON_RAISED: Final = "verifier_raised"
REASON_TIMEOUT: Final = "verifier_timeout"
REASON_GARBAGE: Final = "verifier_returned_garbage"
REASON_MALFORMED: Final = "verifier_malformed_receipt"


@dataclass(frozen=True, slots=True)
class CallContext:
    """What a verifier may read, in memory only: never exported.

    ``structured`` is the result's ``structuredContent`` (``{}`` when absent) and ``text`` the
    concatenated text content, for verifiers that need the tool's own claim (e.g. a path).
    """

    tool: str
    arguments: Mapping[str, Any]
    result: Any = None
    structured: Mapping[str, Any] = field(default_factory=dict)
    text: str = ""


@dataclass(frozen=True, slots=True)
class Receipt:
    """An outcome verifier's answer.

    ``method`` names the kind of receipt (``file_digest``, ``sqlite_row``, ``http_status``, ...),
    ``confidence`` how strong it is (1.0 for deterministic checks; lower for e.g. an LLM judge),
    ``reason`` a short code (never a value) explaining a failed or inconclusive receipt.
    ``method`` and ``reason`` are exported, so they must be codes (letters, digits and
    ``_.:<>-``, at most 64 characters) and ``confidence`` ``None`` or a number in [0, 1]; any other
    receipt is replaced by an ``inconclusive`` one with reason ``verifier_malformed_receipt``.
    """

    result: OutcomeResult
    method: str
    confidence: float | None = 1.0
    reason: str | None = None

    @property
    def passed(self) -> bool | None:
        """``True``/``False`` for passed/failed, ``None`` when inconclusive (core evidence)."""
        if self.result is OutcomeResult.INCONCLUSIVE:
            return None
        return self.result is OutcomeResult.PASSED


VerifierFn = Callable[[CallContext], "Receipt | bool | None"]


@dataclass(frozen=True, slots=True)
class Verifier:
    """A registered verifier: the function, its method name and its timeout."""

    fn: VerifierFn
    method: str
    timeout: float


# ----------------------------------------------------------------------------------------------
# Registry (chosen before the call)
# ----------------------------------------------------------------------------------------------
_lock = threading.Lock()
_verifiers: dict[str, Verifier] = {}
_not_required: set[str] = set()


def register_verifier(
    tool_name: str,
    verifier: VerifierFn,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    method: str | None = None,
) -> None:
    """Choose the outcome verifier for every later call of ``tool_name``.

    ``verifier`` receives a :class:`CallContext` and returns a :class:`Receipt` (or ``True`` /
    ``False`` / ``None`` for passed / failed / inconclusive). ``method`` defaults to the built-in
    verifier's method or the function's name.

    .. versionadded:: 0.1.0
    """
    if timeout <= 0:
        msg = "timeout must be positive"
        raise ValueError(msg)
    name = method or getattr(verifier, "method", None) or getattr(verifier, "__name__", "callable")
    with _lock:
        _not_required.discard(tool_name)
        _verifiers[tool_name] = Verifier(fn=verifier, method=str(name), timeout=timeout)


def outcome_not_required(tool_name: str) -> None:
    """Declare that ``tool_name`` needs no outcome receipt (recorded as ``not_required``).

    This is a policy, not a receipt: such calls can be ``healthy`` but never count as verified
    outcomes. Use it for read-only lookups whose answer *is* the outcome.

    .. versionadded:: 0.1.0
    """
    with _lock:
        _verifiers.pop(tool_name, None)
        _not_required.add(tool_name)


def unregister_verifier(tool_name: str) -> None:
    """Forget the verifier or the ``not_required`` policy of ``tool_name``."""
    with _lock:
        _verifiers.pop(tool_name, None)
        _not_required.discard(tool_name)


def clear_verifiers() -> None:
    """Forget every verifier and policy (tests, reconfiguration)."""
    with _lock:
        _verifiers.clear()
        _not_required.clear()


def verifier_for(tool_name: str) -> Verifier | str | None:
    """The verifier chosen for ``tool_name``, ``"not_required"``, or ``None``."""
    with _lock:
        if tool_name in _not_required:
            return OUTCOME_NOT_REQUIRED
        return _verifiers.get(tool_name)


# ----------------------------------------------------------------------------------------------
# Running verifiers: never raise, never block the caller past the timeout, never delay exit
# ----------------------------------------------------------------------------------------------
#: What an exported method or reason may look like: a short code, never a value.
_CODE: Final = re.compile(r"[A-Za-z0-9_.:<>-]{1,64}")


def _well_formed(receipt: Receipt) -> bool:
    """A receipt whose every exported field is what :class:`Receipt` promises (it is user data)."""
    result: object = receipt.result
    confidence: object = receipt.confidence
    return (
        isinstance(result, OutcomeResult)
        and _is_code(receipt.method)
        and (receipt.reason is None or _is_code(receipt.reason))
        and (
            confidence is None
            or (
                isinstance(confidence, int | float)
                and not isinstance(confidence, bool)
                and 0.0 <= confidence <= 1.0
            )
        )
    )


def _is_code(value: object) -> bool:
    return isinstance(value, str) and _CODE.fullmatch(value) is not None


def _coerce(value: object, method: str) -> Receipt:
    if isinstance(value, Receipt):
        if _well_formed(value):
            return value
        return Receipt(OutcomeResult.INCONCLUSIVE, method, confidence=None, reason=REASON_MALFORMED)
    if value is True:
        return Receipt(OutcomeResult.PASSED, method)
    if value is False:
        return Receipt(OutcomeResult.FAILED, method, reason="verifier_failed")
    if value is None:
        return Receipt(OutcomeResult.INCONCLUSIVE, method, confidence=None)
    return Receipt(OutcomeResult.INCONCLUSIVE, method, confidence=None, reason=REASON_GARBAGE)


def run_verifier(verifier: Verifier, call: CallContext) -> Receipt:
    """Run a verifier in the current thread; anything it raises becomes ``inconclusive``.

    Even a ``BaseException`` (``asyncio.CancelledError``, ``SystemExit``, ``KeyboardInterrupt``,
    ...): the verifier runs on our worker thread, where none of them means "stop the host", and
    swallowing them is what guarantees one receipt per call. Only the exception's type is logged:
    its message may quote the call's arguments.
    """
    try:
        return _coerce(verifier.fn(call), verifier.method)
    except BaseException as exc:  # a verifier is user code: it must never break anything
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
        except BaseException as exc:  # our own callback: the worker must survive
            _logger.debug("mcp_health: receipt callback raised %s", _type_name(exc))
        finally:
            self._runner._delivered(self)


class VerifierRunner:
    """A small pool of daemon worker threads that delivers exactly one receipt per submission.

    :meth:`submit` returns at once. The callback gets the receipt and the verifier's duration in
    seconds, from a worker thread, or from a timer thread with an ``inconclusive`` /
    ``verifier_timeout`` receipt when the verifier has not answered within its timeout (the hung
    worker is abandoned; a late answer is dropped).

    The host's exit is never delayed: the workers are daemon threads (a hung verifier cannot keep
    the interpreter alive, unlike a ``ThreadPoolExecutor``'s, which are joined at exit), and an
    exit hook delivers every receipt still outstanding as ``inconclusive`` / ``verifier_timeout``,
    so the spans waiting for them end before the tracer provider's own exit hook exports.
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

    def abandon(self) -> None:
        """Deliver every outstanding receipt now as ``inconclusive`` (the exit hook)."""
        with self._idle:
            self._closed = True
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


# ----------------------------------------------------------------------------------------------
# Built-in verifiers
# ----------------------------------------------------------------------------------------------
#: A value, or a function of the call that computes it (e.g. a path from the arguments).
Source: TypeAlias = _T | Callable[[CallContext], _T]


def _resolve(value: Source[_T], call: CallContext) -> _T:
    if callable(value):
        resolved: _T = value(call)
        return resolved
    return value


class _Builtin:
    """Base of the built-in verifiers: a named method and a ``__call__``."""

    method = "callable"

    def __call__(self, call: CallContext) -> Receipt:  # pragma: no cover - abstract
        raise NotImplementedError


class file_digest(_Builtin):
    """The file the tool promised exists (and, when given, its SHA-256 matches).

    ``path`` and ``expected_sha256`` are values or functions of the :class:`CallContext`.
    """

    method = "file_digest"

    def __init__(
        self, *, path: Source[str | Path], expected_sha256: Source[str | None] = None
    ) -> None:
        self._path = path
        self._expected = expected_sha256

    def __call__(self, call: CallContext) -> Receipt:
        target = Path(str(_resolve(self._path, call)))
        if not target.is_file():
            return Receipt(OutcomeResult.FAILED, self.method, reason="file_absent")
        expected = _resolve(self._expected, call)
        if expected is None:
            return Receipt(OutcomeResult.PASSED, self.method, confidence=0.8)
        digest = hashlib.sha256(target.read_bytes()).hexdigest()
        if digest != expected.removeprefix("sha256:").lower():
            return Receipt(OutcomeResult.FAILED, self.method, reason="digest_mismatch")
        return Receipt(OutcomeResult.PASSED, self.method)


class sqlite_row(_Builtin):
    """A database row exists (DB-API), optionally with an expected version.

    ``connect`` returns a DB-API connection (e.g. ``lambda: sqlite3.connect(path)``); ``query``
    selects the row (its first column is compared with ``expected_version`` when given);
    ``params`` are the query parameters, a value or a function of the call.
    """

    method = "sqlite_row"

    def __init__(
        self,
        *,
        connect: Callable[[], Any],
        query: str,
        params: Source[Sequence[Any]] = (),
        expected_version: Source[Any] = None,
    ) -> None:
        self._connect = connect
        self._query = query
        self._params = params
        self._expected = expected_version

    def __call__(self, call: CallContext) -> Receipt:
        connection = self._connect()
        try:
            cursor = connection.cursor()
            cursor.execute(self._query, tuple(_resolve(self._params, call)))
            row = cursor.fetchone()
        finally:
            connection.close()
        if row is None:
            return Receipt(OutcomeResult.FAILED, self.method, reason="row_absent")
        expected = _resolve(self._expected, call)
        if expected is not None and row[0] != expected:
            return Receipt(OutcomeResult.FAILED, self.method, reason="version_mismatch")
        return Receipt(OutcomeResult.PASSED, self.method)


class http_status(_Builtin):
    """An HTTP GET of the promised URL returns the expected status (default 200)."""

    method = "http_status"

    def __init__(self, *, url: Source[str], expected: int = 200, timeout: float = 5.0) -> None:
        self._url = url
        self._expected = expected
        self._timeout = timeout

    def __call__(self, call: CallContext) -> Receipt:
        url = _resolve(self._url, call)
        if not url.startswith(("http://", "https://")):
            return Receipt(OutcomeResult.INCONCLUSIVE, self.method, None, "unsupported_url")
        request = urllib.request.Request(url, method="GET")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                status = int(response.status)
        except urllib.error.HTTPError as exc:
            status = exc.code
        except (urllib.error.URLError, OSError):
            return Receipt(OutcomeResult.INCONCLUSIVE, self.method, None, "unreachable")
        if status != self._expected:
            return Receipt(OutcomeResult.FAILED, self.method, reason=f"http_{status}")
        return Receipt(OutcomeResult.PASSED, self.method)


class from_callable(_Builtin):
    """Any user function of the call returning a :class:`Receipt` or ``True``/``False``/``None``.

    ``confidence`` labels how strong the evidence is (e.g. 0.5 for an LLM judge).
    """

    def __init__(
        self, fn: VerifierFn, *, method: str = "callable", confidence: float | None = 1.0
    ) -> None:
        self._fn = fn
        self.method = method
        self._confidence = confidence

    def __call__(self, call: CallContext) -> Receipt:
        receipt = _coerce(self._fn(call), self.method)
        if receipt.confidence == 1.0 and self._confidence != 1.0:
            return Receipt(receipt.result, receipt.method, self._confidence, receipt.reason)
        return receipt
