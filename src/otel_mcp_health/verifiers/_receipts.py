"""Receipts: what a verifier may read (:class:`CallContext`) and what it answers (:class:`Receipt`).

A verifier's answer is user data: :func:`coerce` turns it into a receipt whose exported fields are
codes, or into an ``inconclusive`` one with a reason code saying what was wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from otel_mcp_health.core.reasons import ReceiptReason
from otel_mcp_health.core.vocabulary import OutcomeResult


@dataclass(frozen=True, slots=True)
class CallContext:
    """What a verifier may read, in memory only: never exported.

    ``structured`` is the result's ``structuredContent`` (``{}`` when absent) and ``text`` the
    concatenated text content, for verifiers that need the tool's own claim (e.g. a path).
    ``server`` is the server's name from the handshake and ``read_only`` the tool's
    ``readOnlyHint`` in the last discovery (``None`` when unknown).
    """

    tool: str
    arguments: Mapping[str, Any]
    result: Any = None
    structured: Mapping[str, Any] = field(default_factory=dict)
    text: str = ""
    server: str | None = None
    read_only: bool | None = None


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


def coerce(value: object, method: str) -> Receipt:
    """A verifier's answer as a receipt.

    ``True``/``False``/``None`` mean passed/failed/inconclusive; a malformed receipt or any other
    value gives an ``inconclusive`` receipt whose reason says which.
    """
    if isinstance(value, Receipt):
        if _well_formed(value):
            return value
        return Receipt(
            OutcomeResult.INCONCLUSIVE, method, confidence=None, reason=ReceiptReason.MALFORMED
        )
    if value is True:
        return Receipt(OutcomeResult.PASSED, method)
    if value is False:
        return Receipt(OutcomeResult.FAILED, method, reason=ReceiptReason.VERIFIER_FAILED)
    if value is None:
        return Receipt(OutcomeResult.INCONCLUSIVE, method, confidence=None)
    return Receipt(
        OutcomeResult.INCONCLUSIVE, method, confidence=None, reason=ReceiptReason.GARBAGE
    )
