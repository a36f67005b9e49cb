"""Borrowed ``tools/call`` spans held until their outcome receipt arrives (processor shell).

A CLIENT span another library created (FastMCP's ``Client``) is ended by its owner as soon as
the call returns, while the tool's outcome verifier is still running. The instrumentation marks
such a span ``mcp_health.receipt.pending`` and later emits an ``mcp_health.outcome`` span, linked
to it, with the receipt. The processor holds the call span (bounded) and judges it once, with the
receipt, exactly as it judges a span of ours that stayed open for its receipt. A span held when
the bound is reached, at a flush or at shutdown is released without its receipt.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.sdk.trace import ReadableSpan

from otel_mcp_health import _codec
from otel_mcp_health.processor import _spans

#: Calls held at once; a span beyond this is judged at once, without its receipt.
MAX_HELD: Final = 1024
#: The receipt attributes a receipt span hands to the call it completes.
_RECEIPT_PREFIX: Final = "mcp_health.outcome."


class HeldCalls:
    """Span id -> the ended call span waiting for its receipt, or the receipt that came first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: span id -> (the held call, its session key: the session stays open for it)
        self._held: dict[int, tuple[ReadableSpan, str | None]] = {}
        self._early: dict[int, dict[str, Any]] = {}

    def call_ended(
        self, span: ReadableSpan, attrs: Mapping[str, Any]
    ) -> tuple[bool, dict[str, Any] | None]:
        """A call span ended: ``(held, receipt)``. Held: it waits for its receipt. Not held: judge
        it now, with ``receipt`` when that already arrived (or ``None`` for no receipt)."""
        if not _codec.decode_pending(attrs) or span.context is None:
            return False, None
        span_id = span.context.span_id
        with self._lock:
            early = self._early.pop(span_id, None)
            if early is not None or len(self._held) >= MAX_HELD:
                return False, early
            self._held[span_id] = (span, _spans.session_key(attrs))
        return True, None

    def has_calls(self, key: str) -> bool:
        """Whether a call of session ``key`` waits for its receipt (its facts must stay)."""
        with self._lock:
            return any(known == key for _, known in self._held.values())

    def receipt_ended(self, receipt: ReadableSpan) -> tuple[ReadableSpan, dict[str, Any]] | None:
        """A receipt span ended: the held call it completes, with the receipt's attributes (or
        ``None``: the call has not ended yet and will find the receipt then)."""
        extra = {
            key: value
            for key, value in (receipt.attributes or {}).items()
            if key.startswith(_RECEIPT_PREFIX)
        }
        with self._lock:
            for link in receipt.links:
                held = self._held.pop(link.context.span_id, None)
                if held is not None:
                    return held[0], extra
                if len(self._early) < MAX_HELD:
                    self._early[link.context.span_id] = extra
        return None

    def drain(self) -> list[ReadableSpan]:
        """Every held span, forgotten (flush, shutdown)."""
        with self._lock:
            spans = [span for span, _ in self._held.values()]
            self._held.clear()
        return spans
