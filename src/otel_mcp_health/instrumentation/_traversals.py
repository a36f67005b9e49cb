"""The application ``tools/list`` traversals of a session in progress (private).

A traversal's pages are walked as a cursor chain (:mod:`otel_mcp_health.core.traversal`); its tool
definitions are kept in memory, while the chain is intact and within the page cap, for the catalog
digest at its end. One session may run several at once (one toolset wrapped in two others, two
tasks paging the same session): each is its own chain, told apart by cursors, as the processor
tells them apart from the spans (``processor._traversals``, docs/model.md#concurrent-traversals).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from otel_mcp_health.core.traversal import CursorChain

if TYPE_CHECKING:  # the session's state holds its traversals
    from otel_mcp_health.instrumentation._state import SessionState

#: Open ``tools/list`` traversals a session keeps at once. Two listings of one session may run
#: concurrently (one toolset wrapped twice, two tasks paging at once): each is its own cursor
#: chain. A client that starts traversals and never finishes them loses its oldest open one
#: first, so a session's traversal state stays bounded (this many chains, each within the page
#: cap).
MAX_OPEN_TRAVERSALS: Final = 8


@dataclass(slots=True, eq=False)
class Traversal:
    """An application ``tools/list`` traversal in progress (first page = request without cursor):
    its chain, walked page by page, and its tools while the chain is intact."""

    chain: CursorChain
    tools: list[dict[str, Any]] = field(default_factory=list)
    #: The keyed hash of the ``nextCursor`` of its last page: the cursor of the page that
    #: continues it (kept after a defect too, so that a loop's next pages stay in their chain).
    last_next: str | None = None


def open_traversal(state: SessionState, cursor: str | None, max_pages: int) -> Traversal:
    """The open traversal a page of ``cursor`` (a keyed hash) belongs to.

    A page without a cursor starts a traversal (the oldest open one is dropped past
    :data:`MAX_OPEN_TRAVERSALS`). A page with a cursor continues the open traversal whose last
    ``nextCursor`` it is (of two waiting for the same cursor, the one started last: they list the
    same pages, and a client that gave up a traversal and started again goes on with the new
    one). A cursor no open traversal waits for joins the one started last, whose walk then reads
    the gap or the loop, exactly as a single traversal always did; with none open, at least one
    page was not seen (a chain joined midway: a gap).
    """
    open_ = state.traversals
    if cursor is None:
        traversal = Traversal(CursorChain(max_pages))
        open_.append(traversal)
        if len(open_) > MAX_OPEN_TRAVERSALS:
            del open_[0]
        return traversal
    for traversal in reversed(open_):
        if traversal.last_next == cursor:
            return traversal
    if open_:
        return open_[-1]
    traversal = Traversal(CursorChain.joined_midway(max_pages))
    open_.append(traversal)
    return traversal
