"""Every fixed reason code, in one enumeration (docs/model.md#reasons).

A verdict's reason is one of these members, or a code built from the evidence: ``http_<status>``,
``jsonrpc_<code>``, a transport outcome, an authorization error, a digest reason, or
``catalog_<reason>`` for a call whose catalog is not converged. Members are strings, so they
compare, format and serialize as their value.
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


__all__ = ["Reason"]
