"""The one walk of a ``tools/list`` cursor chain, page by page, with the one page cap.

A traversal's pages must start without a cursor, each later page's cursor must equal the previous
page's ``nextCursor`` (else ``cursor_gap``), no cursor may repeat (``cursor_loop``), no page may
fail (``page_failed``), and the last page must have no ``nextCursor`` (else ``cursor_remaining``,
also when abandoned or longer than the page cap). The reason is the first defect met walking from
the first page (docs/model.md#catalog).

The walk is incremental so that live state stays bounded: it keeps the first defect, the cursor
it expects next and one 8-byte hash per page up to the cap (for loops), and drops those hashes as
soon as the chain is decided (a defect, or the cap). A chain longer than the cap is never
complete: missing evidence is never green. The offline classifier walks recorded pages uncapped.

A page costs the same wherever it falls in the chain: the hashes are kept sorted, so the loop test
is a binary search (``log2(pages)`` compares) and the insertion one C ``memmove`` of at most the
cap's 8 KiB, never a scan of every earlier hash (docs/performance.md).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass
from typing import Final

from otel_mcp_health.core.reasons import Reason

DEFAULT_MAX_PAGES: Final = 1000
"""Pages walked per traversal (``OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_PAGES``)."""

CURSOR_REMAINING: Final = Reason.CURSOR_REMAINING
CURSOR_GAP: Final = Reason.CURSOR_GAP
CURSOR_LOOP: Final = Reason.CURSOR_LOOP
PAGE_FAILED: Final = Reason.PAGE_FAILED
COMPLETION_UNRECORDED: Final = Reason.COMPLETION_UNRECORDED


@dataclass(frozen=True, slots=True)
class ChainSummary:
    """What a walked chain tells the catalog rules: its first defect and whether it is open."""

    pages: int
    defect: str | None
    open_end: bool

    def verdict(self, *, completed: bool) -> str | None:
        """The chain's defect, or ``None`` when it is complete (``completed``: an end recorded)."""
        if self.defect is not None:
            return self.defect
        if self.pages == 0:
            return None if completed else CURSOR_REMAINING
        if self.open_end:
            return CURSOR_REMAINING
        return None if completed else COMPLETION_UNRECORDED


class CursorChain:
    """Walks a chain one page at a time; ``max_pages=None`` walks without a cap."""

    __slots__ = ("_expected", "_max_pages", "_seen", "defect", "pages", "truncated")

    def __init__(self, max_pages: int | None = DEFAULT_MAX_PAGES) -> None:
        self._max_pages = max_pages
        self._seen: array[int] | None = array("q")
        self._expected: str | None = None
        self.pages = 0
        self.defect: str | None = None
        self.truncated = False

    @classmethod
    def joined_midway(cls, max_pages: int | None = DEFAULT_MAX_PAGES) -> CursorChain:
        """A chain first seen at a page with a cursor: at least one page was missed."""
        chain = cls(max_pages)
        chain.pages = 1
        chain._decide(CURSOR_GAP)
        return chain

    @property
    def intact(self) -> bool:
        """No defect so far and within the cap."""
        return self.defect is None and not self.truncated

    @property
    def expected(self) -> str | None:
        """The ``nextCursor`` of the last page walked."""
        return self._expected

    def add(self, cursor: str | None, next_cursor: str | None, *, failed: bool = False) -> None:
        """Walk one more page."""
        index = self.pages
        self.pages += 1
        seen = self._seen
        if seen is None:
            return  # decided: nothing after the first defect or the cap changes the verdict
        if self._max_pages is not None and index >= self._max_pages:
            self.truncated = True
            self._seen = None
            return
        key = hash(cursor)
        at = bisect_left(seen, key)  # ``seen`` is sorted: the hashes walked so far
        if failed:
            self._decide(PAGE_FAILED)
        elif index > 0 and at < len(seen) and seen[at] == key:
            self._decide(CURSOR_LOOP)
        elif cursor != self._expected:
            self._decide(CURSOR_GAP)
        else:
            seen.insert(at, key)
            self._expected = next_cursor

    def summary(self) -> ChainSummary:
        """An immutable snapshot for the catalog rules."""
        return ChainSummary(self.pages, self.defect, self.truncated or self._expected is not None)

    def _decide(self, defect: str) -> None:
        self.defect = defect
        self._seen = None


__all__ = [
    "COMPLETION_UNRECORDED",
    "CURSOR_GAP",
    "CURSOR_LOOP",
    "CURSOR_REMAINING",
    "DEFAULT_MAX_PAGES",
    "PAGE_FAILED",
    "ChainSummary",
    "CursorChain",
]
