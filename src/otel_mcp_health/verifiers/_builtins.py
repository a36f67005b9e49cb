"""Built-in verifiers: a file and its digest, a database row, an HTTP status, any callable."""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

from otel_mcp_health.core.vocabulary import OutcomeResult
from otel_mcp_health.verifiers._receipts import CallContext, Receipt, VerifierFn, coerce

_T = TypeVar("_T")

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


class file_digest(_Builtin):  # noqa: N801 - the class name is the policy file's kind name
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


class sqlite_row(_Builtin):  # noqa: N801 - the class name is the policy file's kind name
    """A database row exists (DB-API), optionally with an expected version.

    ``connect`` returns a DB-API connection (e.g. ``lambda: sqlite3.connect(path)``); ``query``
    selects the row (its first column is compared with ``expected_version`` when given);
    ``params`` are the query parameters (a sequence, or a mapping for named ``:name``
    placeholders), a value or a function of the call.
    """

    method = "sqlite_row"

    def __init__(
        self,
        *,
        connect: Callable[[], Any],
        query: str,
        params: Source[Sequence[Any] | Mapping[str, Any]] = (),
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
            params = _resolve(self._params, call)
            cursor.execute(self._query, params if isinstance(params, Mapping) else tuple(params))
            row = cursor.fetchone()
        finally:
            connection.close()
        if row is None:
            return Receipt(OutcomeResult.FAILED, self.method, reason="row_absent")
        expected = _resolve(self._expected, call)
        if expected is not None and row[0] != expected:
            return Receipt(OutcomeResult.FAILED, self.method, reason="version_mismatch")
        return Receipt(OutcomeResult.PASSED, self.method)


class http_status(_Builtin):  # noqa: N801 - the class name is the policy file's kind name
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
        request = urllib.request.Request(url, method="GET")  # noqa: S310 - http(s) only, checked above
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:  # noqa: S310 - http(s) only, checked above
                status = int(response.status)
        except urllib.error.HTTPError as exc:
            status = exc.code
        except (urllib.error.URLError, OSError):
            return Receipt(OutcomeResult.INCONCLUSIVE, self.method, None, "unreachable")
        if status != self._expected:
            return Receipt(OutcomeResult.FAILED, self.method, reason=f"http_{status}")
        return Receipt(OutcomeResult.PASSED, self.method)


class from_callable(_Builtin):  # noqa: N801 - the class name is the policy file's kind name
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
        receipt = coerce(self._fn(call), self.method)
        if receipt.confidence == 1.0 and self._confidence != 1.0:
            return Receipt(receipt.result, receipt.method, self._confidence, receipt.reason)
        return receipt
