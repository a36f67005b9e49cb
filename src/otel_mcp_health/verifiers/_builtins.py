"""Built-in verifiers: a file and its digest, a database row, an HTTP status, any callable."""

from __future__ import annotations

import errno
import hashlib
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeAlias, TypeVar

from otel_mcp_health.core.reasons import ReceiptReason
from otel_mcp_health.core.vocabulary import OutcomeResult
from otel_mcp_health.verifiers._receipts import CallContext, Receipt, VerifierFn, coerce

_T = TypeVar("_T")
#: The most bytes :class:`file_digest` hashes by default (64 MiB; its time is in
#: docs/performance.md): a larger file is ``inconclusive`` (``file_too_large``) after one
#: ``stat``, never read whole.
MAX_DIGEST_BYTES: Final = 64 * 1024 * 1024
_CHUNK: Final = 1024 * 1024

#: A value, or a function of the call that computes it (e.g. a path from the arguments).
Source: TypeAlias = _T | Callable[[CallContext], _T]


def is_file(path: Path) -> bool:
    """Whether ``path`` is a regular file (symlinks followed); ``False`` for a name too long for
    the filesystem, which no file can have (``Path.is_file`` raises for it)."""
    try:
        return path.is_file()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return False
        raise


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

    ``path`` and ``expected_sha256`` are values or functions of the :class:`CallContext`. The
    digest is streamed; a file larger than ``max_bytes`` (default :data:`MAX_DIGEST_BYTES`) is
    ``inconclusive`` (``file_too_large``) and never read.
    """

    method = "file_digest"

    def __init__(
        self,
        *,
        path: Source[str | Path],
        expected_sha256: Source[str | None] = None,
        max_bytes: int = MAX_DIGEST_BYTES,
    ) -> None:
        self._path = path
        self._expected = expected_sha256
        self._max_bytes = max_bytes

    def __call__(self, call: CallContext) -> Receipt:
        target = Path(str(_resolve(self._path, call)))
        if not is_file(target):
            return Receipt(OutcomeResult.FAILED, self.method, reason=ReceiptReason.FILE_ABSENT)
        expected = _resolve(self._expected, call)
        if expected is None:
            return Receipt(OutcomeResult.PASSED, self.method, confidence=0.8)
        digest = _sha256(target, self._max_bytes)
        if digest is None:
            return Receipt(
                OutcomeResult.INCONCLUSIVE, self.method, None, ReceiptReason.FILE_TOO_LARGE
            )
        if digest != expected.removeprefix("sha256:").lower():
            return Receipt(OutcomeResult.FAILED, self.method, reason=ReceiptReason.DIGEST_MISMATCH)
        return Receipt(OutcomeResult.PASSED, self.method)


def _sha256(path: Path, max_bytes: int) -> str | None:
    """The file's SHA-256, read in chunks; ``None`` when it holds more than ``max_bytes`` (its
    size says so before any read, and a file that grows while read is cut off at the cap)."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        if os.fstat(file.fileno()).st_size > max_bytes:
            return None
        left = max_bytes + 1
        while chunk := file.read(min(_CHUNK, left)):
            digest.update(chunk)
            left -= len(chunk)
            if left <= 0:
                return None
    return digest.hexdigest()


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
            return Receipt(OutcomeResult.FAILED, self.method, reason=ReceiptReason.ROW_ABSENT)
        expected = _resolve(self._expected, call)
        if expected is not None and row[0] != expected:
            return Receipt(OutcomeResult.FAILED, self.method, reason=ReceiptReason.VERSION_MISMATCH)
        return Receipt(OutcomeResult.PASSED, self.method)


class http_status(_Builtin):  # noqa: N801 - the class name is the policy file's kind name
    """An HTTP GET of the promised URL returns the expected status (default 200).

    A redirect is not followed: its own status is the answer. With ``follow_redirects``, one to
    the same origin (scheme, host and port) is followed, and one to another origin is not and
    gives a ``failed`` receipt (``redirect_off_origin``).
    """

    method = "http_status"

    def __init__(
        self,
        *,
        url: Source[str],
        expected: int = 200,
        timeout: float = 5.0,
        follow_redirects: bool = False,
    ) -> None:
        self._url = url
        self._expected = expected
        self._timeout = timeout
        self._follow = follow_redirects

    def __call__(self, call: CallContext) -> Receipt:
        url = _resolve(self._url, call)
        if urllib.parse.urlsplit(url).scheme.lower() not in ("http", "https"):
            return Receipt(
                OutcomeResult.INCONCLUSIVE, self.method, None, ReceiptReason.UNSUPPORTED_URL
            )
        redirects = _Redirects(follow=self._follow)
        opener = urllib.request.build_opener(redirects)
        request = urllib.request.Request(url, method="GET")  # noqa: S310 - http(s) only, checked above
        try:
            with opener.open(request, timeout=self._timeout) as response:
                status = int(response.status)
        except urllib.error.HTTPError as exc:
            status = exc.code
            exc.close()  # its body is never read
        except (urllib.error.URLError, OSError):
            return Receipt(OutcomeResult.INCONCLUSIVE, self.method, None, ReceiptReason.UNREACHABLE)
        if redirects.off_origin:
            return Receipt(
                OutcomeResult.FAILED, self.method, reason=ReceiptReason.REDIRECT_OFF_ORIGIN
            )
        if status != self._expected:
            return Receipt(OutcomeResult.FAILED, self.method, reason=f"http_{status}")
        return Receipt(OutcomeResult.PASSED, self.method)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or ""), parts.port or {"http": 80, "https": 443}.get(scheme)


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only when allowed and to the request's own origin; a refused one
    leaves its 3xx status as the answer (``off_origin`` says whether the origin was why)."""

    def __init__(self, *, follow: bool) -> None:
        self._follow = follow
        self.off_origin = False

    def redirect_request(  # noqa: PLR0917 - urllib's signature
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if not self._follow:
            return None
        if _origin(newurl) != _origin(req.full_url):
            self.off_origin = True
            return None
        # urllib reads a followed redirect's whole body before the next request: closed now, it
        # reads nothing, so a huge or endless body neither fills the memory nor holds the verifier.
        fp.close()
        return super().redirect_request(req, fp, code, msg, headers, newurl)


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
