"""Every fixed reason code, one enumeration per kind of judgement (docs/model.md#reasons).

A verdict's reason is a :class:`Reason`, or a code built from the evidence: ``http_<status>``,
``jsonrpc_<code>``, a transport outcome, an authorization error, a :class:`DigestReason`, or
``catalog_<reason>`` for a call whose catalog is not converged. The other enumerations name why
an approval drifted (:class:`ApprovalReason`), why a catalog has no digest
(:class:`DigestReason`), why a pin file is refused (:class:`PinsReason`) and what a verifier's
receipt found (:class:`ReceiptReason`). A code may appear in two of them with two meanings
(``digest_mismatch``: a catalog's, or a verified file's). Members are strings, so they compare,
format and serialize as their value.
"""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """A fixed reason code."""

    OK = "ok"
    # catalog (docs/model.md#catalog)
    NO_DISCOVERY = "no_discovery"
    NO_REFRESH_POLICY = "no_refresh_policy"
    REFRESH_OVERDUE = "refresh_overdue"
    CLOCK_UNOBSERVED = "clock_unobserved"
    SIGNAL_AFTER_DISCOVERY = "signal_after_discovery"
    DIGEST_MISMATCH = "digest_mismatch"
    #: An installed tool the compared discovery does not list (docs/model.md#catalog).
    INSTALLED_TOOL_UNLISTED = "installed_tool_unlisted"
    #: Tools were discovered and none was installed: the model is offered nothing.
    NOTHING_INSTALLED = "nothing_installed"
    #: The model was offered exactly an earlier complete discovery of the server, not the
    #: latest one: it runs on the old catalog, even when the change only added a tool
    #: (docs/model.md#agents).
    EARLIER_CATALOG_OFFERED = "earlier_catalog_offered"
    DIGEST_UNAVAILABLE = "digest_unavailable"
    UNKNOWN_TOOL_CALLED = "unknown_tool_called"
    MISSING_REQUIRED_ARGUMENT = "missing_required_argument"
    # approved catalogs (docs/evidence-format.md#pin-file)
    #: The called tool's current definition is not the approved one (changed materially, or
    #: added since the pins were written).
    TOOL_UNAPPROVED = "tool_unapproved"
    #: The pin file could not be read or parsed: every pinned server reads unapproved.
    PINS_UNREADABLE = "pins_unreadable"
    # cursor chains (docs/model.md#catalog)
    CURSOR_REMAINING = "cursor_remaining"
    CURSOR_GAP = "cursor_gap"
    CURSOR_LOOP = "cursor_loop"
    PAGE_FAILED = "page_failed"
    COMPLETION_UNRECORDED = "completion_unrecorded"
    # layers (docs/model.md#layers)
    TIMEOUT = "timeout"
    IS_ERROR = "is_error"
    OUTPUT_SCHEMA_VIOLATION = "output_schema_violation"
    RESULT_SCHEMA_VIOLATION = "result_schema_violation"
    VERIFIER_FAILED = "verifier_failed"
    VERIFIER_INCONCLUSIVE = "verifier_inconclusive"
    NO_OUTCOME_VERIFIER = "no_outcome_verifier"
    OUTCOME_NOT_REQUIRED = "outcome_not_required"
    EFFECT_CONFIRMED = "effect_confirmed"
    #: The recorder could not gather some evidence (an SDK without a hook it needs).
    EVIDENCE_MISSING = "evidence_missing"
    # contract (docs/model.md#verdicts)
    UNSUPPORTED_VERSION = "unsupported_version"
    MISSING_CAPABILITY = "missing_capability_tools"
    SESSION_UNOBSERVED = "session_unobserved"
    NO_CALL = "no_call"
    EFFECT_ABSENT = "effect_absent"
    IN_FLIGHT = "in_flight"
    # progress clocks (docs/model.md#verdicts)
    IDLE_WINDOW = "idle_window"
    DEADLINE = "deadline"


class ApprovalReason(StrEnum):
    """``mcp_health.catalog.approval.reason``; order = precedence (the first that applies)."""

    PINS_UNREADABLE = "pins_unreadable"
    MATERIAL_CHANGE = "material_change"
    TOOL_ADDED = "tool_added"
    NO_MATCHING_PINS = "no_matching_pins"


class DigestReason(StrEnum):
    """Why a catalog has no digest (``DigestError.reason``)."""

    #: A value in the catalog has no RFC 8785 form (NaN, ±inf, an unsafe integer, a lone
    #: surrogate, a non-string key, a non-JSON type, nesting deeper than ``jcs.MAX_DEPTH``).
    UNREPRESENTABLE = "digest_unrepresentable"
    #: An element of the tool list is not a JSON object (``Mapping``).
    TOOL_NOT_AN_OBJECT = "tool_not_an_object"
    #: A tool has no ``name`` member, or its ``name`` is not a string.
    TOOL_WITHOUT_NAME = "tool_without_name"
    #: The tool list itself cannot be iterated (or its iteration fails).
    TOOLS_NOT_A_LIST = "tools_not_a_list"


class PinsReason(StrEnum):
    """Why a pin file is refused (``PinsError.reason``, docs/evidence-format.md#pin-file)."""

    NOT_TOML = "pins_not_toml"
    BAD_FORMAT = "pins_bad_format"
    BAD_PROJECTION = "pins_bad_projection"
    UNKNOWN_KEY = "pins_unknown_key"
    MISSING_KEY = "pins_missing_key"
    BAD_TYPE = "pins_bad_type"
    BAD_DIGEST = "pins_bad_digest"
    EMPTY_TOOL = "pins_empty_tool"
    DUPLICATE_TOOL = "pins_duplicate_tool"
    DUPLICATE_SERVER = "pins_duplicate_server"
    #: A value a pin file cannot hold (a lone surrogate has no TOML form).
    UNREPRESENTABLE = "pins_unrepresentable"


class ReceiptReason(StrEnum):
    """What a verifier's receipt found (``mcp_health.outcome.reason``, docs/outcomes.md).

    A receipt's reason is one of these, ``http_<status>`` for an HTTP verifier that got another
    status, or a code a user's verifier put in its own receipt. A code never carries a value:
    not a path, a URL, an argument or a message.
    """

    # ---- failed: the promised artefact is not there, or the call asked to look elsewhere ----
    #: ``file``: no file at the path.
    FILE_ABSENT = "file_absent"
    #: ``file``: the file's SHA-256 is not the expected one.
    DIGEST_MISMATCH = "digest_mismatch"
    #: ``sqlite``: the query returned no row.
    ROW_ABSENT = "row_absent"
    #: ``sqlite_row`` in code: the row's first column is not the expected version.
    VERSION_MISMATCH = "version_mismatch"
    #: A function verifier returned ``False``.
    VERIFIER_FAILED = "verifier_failed"
    #: An argument would change a template's structure instead of filling it: it is ``.`` or
    #: ``..``, absolute, or holds a NUL byte or a path separator
    #: (docs/outcomes.md#arguments-are-data).
    ARGUMENT_UNSAFE = "argument_unsafe"
    #: ``file``, ``sqlite``: the expanded path, resolved (symlinks included), is not under the
    #: directory the template's literal prefix names.
    PATH_OUTSIDE_BASE = "path_outside_base"
    #: ``http``: a redirect to another origin (scheme, host, port), not followed.
    REDIRECT_OFF_ORIGIN = "redirect_off_origin"

    # ---- inconclusive: no evidence either way ----
    #: A template or a query parameter names an argument the call lacks.
    ARGUMENT_MISSING = "argument_missing"
    #: That argument is not a string or a number.
    ARGUMENT_NOT_SCALAR = "argument_not_scalar"
    #: ``file``: the file is larger than the verifier's byte cap; it is never read.
    FILE_TOO_LARGE = "file_too_large"
    #: ``http``: no answer (connection refused, DNS, TLS, timeout).
    UNREACHABLE = "unreachable"
    #: ``http_status`` in code: the URL a function computed is not ``http://`` or ``https://``.
    UNSUPPORTED_URL = "unsupported_url"
    #: ``sqlite``: no database file at the path.
    DATABASE_UNAVAILABLE = "database_unavailable"
    #: ``python``, ``entry_point``: cannot be imported, is not callable, or names the running
    #: script.
    UNAVAILABLE = "verifier_unavailable"
    #: The verifier raised.
    RAISED = "verifier_raised"
    #: No answer within the verifier's timeout.
    TIMEOUT = "verifier_timeout"
    #: The verifier left too many threads hung past their deadline: not run until one returns.
    BROKEN = "verifier_broken"
    #: A function returned something else than a bool, ``None`` or a ``Receipt``.
    GARBAGE = "verifier_returned_garbage"
    #: A function returned a ``Receipt`` whose fields are not codes.
    MALFORMED = "verifier_malformed_receipt"


__all__ = ["ApprovalReason", "DigestReason", "PinsReason", "Reason", "ReceiptReason"]
