"""Verifier functions that the policy tests name with ``verify = "python"``
(``callable = "tests.outcomes.policy_verifiers:<name>"``, imported like any module)."""

from __future__ import annotations

from pathlib import Path

from otel_mcp_health import CallContext, Receipt
from otel_mcp_health.core.vocabulary import OutcomeResult

#: What each call of :func:`record_context` saw: (tool, server, read_only).
SEEN: list[tuple[str, str | None, bool | None]] = []


def report_exists(call: CallContext) -> bool:
    return Path(str(call.arguments["path"])).is_file()


def record_context(call: CallContext) -> Receipt:
    SEEN.append((call.tool, call.server, call.read_only))
    return Receipt(OutcomeResult.PASSED, "context_seen")


def raises_with_the_path(call: CallContext) -> bool:
    raise RuntimeError(f"cannot open {call.arguments['path']}")


NOT_A_FUNCTION = "a string"
