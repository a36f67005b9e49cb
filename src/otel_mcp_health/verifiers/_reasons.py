"""Every reason code a receipt can carry, in one place (docs/outcomes.md#reason-codes).

A receipt's ``reason`` (exported as ``mcp_health.outcome.reason``) is one of these codes, or
``http_<status>`` for an HTTP verifier that got another status, or a code a user's verifier put
in its own :class:`~otel_mcp_health.Receipt`. A code never carries a value: not a path, a URL,
an argument or a message.
"""

from __future__ import annotations

from typing import Final

# ---- failed: the promised artefact is not there, or the call asked to look elsewhere --------
#: ``file``: no file at the path.
REASON_FILE_ABSENT: Final = "file_absent"
#: ``file``: the file's SHA-256 is not the expected one.
REASON_DIGEST_MISMATCH: Final = "digest_mismatch"
#: ``sqlite``: the query returned no row.
REASON_ROW_ABSENT: Final = "row_absent"
#: ``sqlite_row`` in code: the row's first column is not the expected version.
REASON_VERSION_MISMATCH: Final = "version_mismatch"
#: A function verifier returned ``False``.
REASON_VERIFIER_FAILED: Final = "verifier_failed"
#: An argument would change a template's structure instead of filling it: it is ``.`` or
#: ``..``, absolute, or holds a NUL byte or a path separator (docs/outcomes.md#arguments-are-data).
REASON_ARGUMENT_UNSAFE: Final = "argument_unsafe"
#: ``file``, ``sqlite``: the expanded path, resolved (symlinks included), is not under the
#: directory the template's literal prefix names.
REASON_PATH_OUTSIDE_BASE: Final = "path_outside_base"
#: ``http``: a redirect to another origin (scheme, host, port), not followed.
REASON_REDIRECT_OFF_ORIGIN: Final = "redirect_off_origin"

# ---- inconclusive: no evidence either way ----------------------------------------------------
#: A template or a query parameter names an argument the call lacks.
REASON_ARGUMENT_MISSING: Final = "argument_missing"
#: That argument is not a string or a number.
REASON_ARGUMENT_NOT_SCALAR: Final = "argument_not_scalar"
#: ``file``: the file is larger than the verifier's byte cap; it is never read.
REASON_FILE_TOO_LARGE: Final = "file_too_large"
#: ``http``: no answer (connection refused, DNS, TLS, timeout).
REASON_UNREACHABLE: Final = "unreachable"
#: ``http_status`` in code: the URL a function computed is not ``http://`` or ``https://``.
REASON_UNSUPPORTED_URL: Final = "unsupported_url"
#: ``sqlite``: no database file at the path.
REASON_DATABASE_UNAVAILABLE: Final = "database_unavailable"
#: ``python``, ``entry_point``: cannot be imported, is not callable, or names the running script.
REASON_UNAVAILABLE: Final = "verifier_unavailable"
#: The verifier raised.
REASON_RAISED: Final = "verifier_raised"
#: No answer within the verifier's timeout.
REASON_TIMEOUT: Final = "verifier_timeout"
#: The verifier left too many threads hung past their deadline: not run until one returns.
REASON_BROKEN: Final = "verifier_broken"
#: A function returned something else than a bool, ``None`` or a ``Receipt``.
REASON_GARBAGE: Final = "verifier_returned_garbage"
#: A function returned a ``Receipt`` whose fields are not codes.
REASON_MALFORMED: Final = "verifier_malformed_receipt"
