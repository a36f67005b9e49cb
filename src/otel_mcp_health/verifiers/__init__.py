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
run on a small pool of daemon threads, the host's call returns first, one deadline thread
delivers the ``inconclusive`` receipt when a verifier hangs and its worker is replaced (a verifier
with :data:`~otel_mcp_health.verifiers._runner.MAX_ABANDONED` threads hung is not run until one
returns), and a hung verifier holds up the host's exit by
:data:`~otel_mcp_health.verifiers._runner.EXIT_GRACE_S` (1 s) at most.
Logs name only the exception's type: its message may quote what the verifier read.

No verifier → the outcome layer stays ``unobserved`` and the call is at best ``unverified``.

Without code, an **outcome policy** (a TOML file named by
``OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES``, docs/outcomes.md) builds the same verifiers for the
tools it matches (:meth:`OutcomePolicy.load` and :meth:`OutcomePolicy.install` do it from code).
Tools registered in code keep their own verifier.

The package's modules, one concern each: :mod:`._receipts` (what a verifier reads and answers),
:mod:`._registry` (the verifier of each tool), :mod:`._runner` (running verifiers off the host's
thread), :mod:`._builtins` (the built-in verifiers), and the outcome policy: :mod:`._policy`
(loading and installing), :mod:`._policy_parse` (the file's format), :mod:`._policy_kinds` (the
verifier of each kind) and :mod:`._templates` (paths and URLs from the call's arguments).
"""

from typing import Final

from otel_mcp_health.core.reasons import ReceiptReason
from otel_mcp_health.verifiers._builtins import (
    Source,
    file_digest,
    from_callable,
    http_status,
    sqlite_row,
)
from otel_mcp_health.verifiers._policy import (
    OutcomePolicy,
    describe,
    install_from_env,
    uninstall_from_env,
)
from otel_mcp_health.verifiers._policy_parse import ENTRY_POINT_GROUP, OutcomePolicyError
from otel_mcp_health.verifiers._receipts import (
    CallContext,
    Receipt,
    Verifier,
    VerifierFn,
)
from otel_mcp_health.verifiers._registry import (
    DEFAULT_TIMEOUT_S,
    clear_verifiers,
    outcome_not_required,
    register_verifier,
    unregister_verifier,
    verifier_for,
)
from otel_mcp_health.verifiers._runner import ReceiptCallback, VerifierRunner, run_verifier

#: The receipt reason codes a verifier of user code meets most (every code: ReceiptReason).
REASON_ARGUMENT_MISSING: Final[str] = ReceiptReason.ARGUMENT_MISSING.value
REASON_ARGUMENT_NOT_SCALAR: Final[str] = ReceiptReason.ARGUMENT_NOT_SCALAR.value
REASON_DATABASE_UNAVAILABLE: Final[str] = ReceiptReason.DATABASE_UNAVAILABLE.value
REASON_GARBAGE: Final[str] = ReceiptReason.GARBAGE.value
REASON_MALFORMED: Final[str] = ReceiptReason.MALFORMED.value
REASON_RAISED: Final[str] = ReceiptReason.RAISED.value
REASON_TIMEOUT: Final[str] = ReceiptReason.TIMEOUT.value
REASON_UNAVAILABLE: Final[str] = ReceiptReason.UNAVAILABLE.value

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "ENTRY_POINT_GROUP",
    "REASON_ARGUMENT_MISSING",
    "REASON_ARGUMENT_NOT_SCALAR",
    "REASON_DATABASE_UNAVAILABLE",
    "REASON_GARBAGE",
    "REASON_MALFORMED",
    "REASON_RAISED",
    "REASON_TIMEOUT",
    "REASON_UNAVAILABLE",
    "CallContext",
    "OutcomePolicy",
    "OutcomePolicyError",
    "Receipt",
    "ReceiptCallback",
    "Source",
    "Verifier",
    "VerifierFn",
    "VerifierRunner",
    "clear_verifiers",
    "describe",
    "file_digest",
    "from_callable",
    "http_status",
    "install_from_env",
    "outcome_not_required",
    "register_verifier",
    "run_verifier",
    "sqlite_row",
    "uninstall_from_env",
    "unregister_verifier",
    "verifier_for",
]
