"""A session's ``tools/list`` traversals as the processor walks them (private).

A traversal is kept as chain facts walked page by page (:mod:`otel_mcp_health.core.traversal`),
never its pages. One session may run several at once (one toolset wrapped in two others, two
tasks paging the same session): each is its own cursor chain, told apart by cursors. A page
without a cursor starts one; a page with a cursor continues the open traversal whose last
``nextCursor`` it is (of two waiting for the same cursor, the one started last: they list the same
pages, and a client that gave up a traversal and started again goes on with the new one); a page
no open traversal waits for continues the latest, whose walk then reads the gap or the loop, as a
lone traversal always did (docs/model.md#concurrent-traversals).

Bounded: a session keeps at most :data:`MAX_OPEN_TRAVERSALS` open (the oldest is dropped first, as
the instrumentation drops it), each one 8-byte cursor hash per page up to the page cap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from otel_mcp_health.core.evidence import Discovery, Page
from otel_mcp_health.core.traversal import CursorChain

#: Open traversals kept per session (``instrumentation._traversals.MAX_OPEN_TRAVERSALS``).
MAX_OPEN_TRAVERSALS: Final = 8


@dataclass(slots=True, eq=False)
class TraversalFacts:
    """A ``tools/list`` traversal walked page by page: its chain facts, never its pages."""

    started_at: int | None
    chain: CursorChain
    completed_at: int | None = None
    digest: str | None = None
    digest_error: str | None = None
    #: The ``nextCursor`` hash of its last page: the cursor of the page that continues it (kept
    #: after a defect too, so that a loop's next pages stay in their chain).
    last_next: str | None = None

    def walk(self, page: Page) -> bool:
        """Walk one more page; return whether it ended the traversal (complete or not)."""
        self.chain.add(page.cursor, page.next_cursor, failed=page.failed)
        self.last_next = page.next_cursor
        return page.failed or page.next_cursor is None

    def complete(self, ended_at: int | None, digest: str | None, error: str | None) -> Discovery:
        """It reached a page without ``nextCursor`` at ``ended_at``, with the catalog's digest (or
        why none): the discovery it makes (complete unless its chain has a defect)."""
        self.completed_at, self.digest, self.digest_error = ended_at, digest, error
        return self.discovery()

    def discovery(self) -> Discovery:
        """The traversal as a core :class:`Discovery` (its chain already walked)."""
        return Discovery(
            started_at=self.started_at,
            completed_at=self.completed_at,
            chain=self.chain.summary(),
            digest=self.digest,
            digest_error=self.digest_error,
        )


def continued(
    open_: tuple[TraversalFacts, ...], latest: TraversalFacts | None, page: Page
) -> TraversalFacts | None:
    """The traversal a page with a cursor continues: the open one waiting for its cursor, else
    the latest (its walk reads the gap or the loop); ``None`` when the session has none (the page
    then starts a chain of its own, which reads as a gap)."""
    for traversal in reversed(open_):
        if traversal.last_next == page.cursor:
            return traversal
    return latest


def opened(
    open_: tuple[TraversalFacts, ...], traversal: TraversalFacts
) -> tuple[TraversalFacts, ...]:
    """The open traversals with ``traversal`` started (the oldest dropped past the cap)."""
    return (*open_, traversal)[-MAX_OPEN_TRAVERSALS:]


def closed(
    open_: tuple[TraversalFacts, ...], traversal: TraversalFacts
) -> tuple[TraversalFacts, ...]:
    """The open traversals without ``traversal`` (it ended)."""
    return tuple(t for t in open_ if t is not traversal)


def judged_latest(
    latest: TraversalFacts | None,
    open_: tuple[TraversalFacts, ...],
    complete: Discovery | None,
) -> Discovery | None:
    """What the catalog rules call the session's latest traversal: the one started last, unless
    it is still walking without a defect while a complete discovery of the session ended after it
    started. The two ran concurrently, and that discovery is what the session's agent got: the
    catalog is judged on it until the later traversal ends (then on that one, complete or not).
    A traversal started after the last complete discovery ended is the latest as it stands (a
    client that stops paging reads ``cursor_remaining``)."""
    if latest is None:
        return None
    concurrent = (
        complete is not None
        and latest.completed_at is None
        and latest.chain.intact
        and latest in open_
        and complete.completed_at is not None
        and complete.completed_at >= (latest.started_at or 0)
    )
    return complete if concurrent else latest.discovery()
