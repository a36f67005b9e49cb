"""Concurrent ``tools/list`` traversals of one session are told apart by their cursors.

One toolset wrapped twice, or two tasks paging the same session at once, interleave the pages of
two traversals. Each is its own cursor chain: a page without a cursor starts one, a page with a
cursor continues the open one whose last ``nextCursor`` it is. Before, the second first page
replaced the first traversal, and the first traversal's next page read ``cursor_loop`` (or a gap):
a false ``incomplete`` on a normal path. A loop inside one chain still reads ``cursor_loop``, and
the open chains a session keeps are bounded.
"""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan
from tests.support.processor_helpers import DIGEST, Pipeline, SessionSpans, attrs

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.catalog import chain_defect, derive_facts
from otel_mcp_health.core.evidence import Page
from otel_mcp_health.processor._sessions import Session
from otel_mcp_health.processor._traversals import MAX_OPEN_TRAVERSALS


def _page(session: Session, cursor: str | None, next_cursor: str | None, at: int) -> bool:
    """Add one application page, as the engine does; return whether it ended its traversal."""
    return session.add_page(
        Page(cursor=cursor, next_cursor=next_cursor),
        first=cursor is None,
        started_at=at,
        ended_at=at + 1,
        digest=DIGEST if next_cursor is None else None,
        digest_error=None,
    )


def _defect(session: Session) -> str | None:
    """The defect of the traversal the catalog rules call the latest (``None``: complete)."""
    latest = derive_facts(session.catalog(None, 300.0)).latest
    assert latest is not None
    return chain_defect(latest)


def test_two_interleaved_traversals_each_complete() -> None:
    session = Session(key="s", last_seen=0)
    pages = [(None, "c1"), (None, "c1"), ("c1", "c2"), ("c1", "c2"), ("c2", None), ("c2", None)]
    ended = [_page(session, cursor, following, at) for at, (cursor, following) in enumerate(pages)]
    assert ended == [False, False, False, False, True, True]
    assert (_defect(session), session.open_traversals) == (None, ())
    assert session.complete is not None
    assert chain_defect(session.complete) is None


def _pages(session: Session, pages: list[tuple[str | None, str | None]]) -> None:
    for at, (cursor, following) in enumerate(pages):
        _page(session, cursor, following, at)


def test_a_traversal_still_walking_beside_a_complete_concurrent_one() -> None:
    """The one started first completes while the later one is still walking: the session is
    judged on the complete one (what its agent got) until the later one ends."""
    session = Session(key="s", last_seen=0)
    _pages(session, [(None, "c1"), ("c1", "c2"), (None, "c1"), ("c2", None)])
    assert session.complete is not None
    assert session.complete.started_at == 0
    assert _defect(session) is None
    _page(session, "c1", "c2", 4)
    assert _defect(session) is None
    _page(session, "c2", None, 5)
    assert (_defect(session), session.complete.started_at) == (None, 2)


def test_a_later_started_traversal_that_completes_first_stays_the_sessions() -> None:
    """Of two complete discoveries, the one started last is the session's (as its server's)."""
    session = Session(key="s", last_seen=0)
    _pages(session, [(None, "c1"), ("c1", "c2"), (None, "c1"), ("c1", None), ("c2", None)])
    assert session.complete is not None
    assert (session.complete.started_at, _defect(session)) == (2, None)


def test_identical_cursors_continue_the_traversal_started_last() -> None:
    """Both chains wait for ``c1``: the page continues the later one (a client that gave up a
    traversal and started again goes on with the new one); the other is still open."""
    session = Session(key="s", last_seen=0)
    _pages(session, [(None, "c1"), (None, "c1"), ("c1", None)])
    assert session.latest is not None
    assert session.latest.completed_at is not None
    assert [t.started_at for t in session.open_traversals] == [0]
    assert _defect(session) is None


def test_a_concurrent_traversal_that_ends_on_a_defect_is_the_latest() -> None:
    session = Session(key="s", last_seen=0)
    _pages(session, [(None, "c1"), (None, "c1"), ("c1", "c2"), ("c1", None)])
    assert _defect(session) is None  # the first is complete, the later one still walking
    assert session.add_page(  # the later one's second page fails
        Page(cursor="c2", failed=True),
        first=False,
        started_at=4,
        ended_at=5,
        digest=None,
        digest_error=None,
    )
    assert _defect(session) == "page_failed"


def test_a_traversal_started_after_the_last_complete_one_is_judged_as_it_stands() -> None:
    """A client that reads the first page of a new traversal only: ``cursor_remaining``."""
    session = Session(key="s", last_seen=0)
    _page(session, None, "c1", 0)
    _page(session, "c1", None, 1)
    _page(session, None, "c1", 5)
    assert _defect(session) == "cursor_remaining"


def test_a_loop_within_one_chain_reads_cursor_loop() -> None:
    """0 -> c1 -> c2 -> c1: the page asking for c1 again continues its own chain (c1 is that
    chain's last ``nextCursor``), which has seen it: a loop, beside an intact concurrent one."""
    session = Session(key="s", last_seen=0)
    for at, (cursor, following) in enumerate([(None, "c1"), ("c1", "c2"), ("c2", "c1")]):
        _page(session, cursor, following, at)
    _page(session, "c1", "c2", 3)
    assert _defect(session) == "cursor_loop"
    _page(session, "c2", "c1", 4)  # the looping client goes on: still its chain, still a loop
    assert (_defect(session), len(session.open_traversals)) == ("cursor_loop", 1)


def test_a_cursor_no_chain_waits_for_is_a_gap() -> None:
    session = Session(key="s", last_seen=0)
    _page(session, None, "c1", 0)
    _page(session, "elsewhere", None, 1)
    assert _defect(session) == "cursor_gap"
    fresh = Session(key="t", last_seen=0)
    _page(fresh, "c1", None, 0)
    assert _defect(fresh) == "cursor_gap"


def test_open_traversals_are_bounded() -> None:
    """A client that starts traversals and never finishes them keeps at most the cap open."""
    session = Session(key="s", last_seen=0)
    for at in range(10 * MAX_OPEN_TRAVERSALS):
        _page(session, None, f"c{at}", at)
    assert len(session.open_traversals) == MAX_OPEN_TRAVERSALS
    assert [t.started_at for t in session.open_traversals] == list(
        range(9 * MAX_OPEN_TRAVERSALS, 10 * MAX_OPEN_TRAVERSALS)
    )
    last = 10 * MAX_OPEN_TRAVERSALS - 1
    assert _page(session, f"c{last}", None, last + 1)
    assert _defect(session) is None


def _catalog(span: ReadableSpan) -> tuple[object, object]:
    a = attrs(span)
    return a.get(A.CATALOG_VERDICT), a.get(A.CATALOG_REASON)


def test_interleaved_pages_through_the_processor_read_converged() -> None:
    pipeline = Pipeline.build()
    spans = SessionSpans(pipeline.tracer)
    spans.handshake()
    pages = [(None, "c1"), (None, "c1"), ("c1", None), ("c1", None)]
    for index, (cursor, following) in enumerate(pages):
        page: dict[str, object] = {
            A.MCP_METHOD_NAME: "tools/list",
            A.EVIDENCE_ORIGIN: A.ORIGIN_APPLICATION,
            A.TRANSPORT_OUTCOME: "ok",
            A.CATALOG_PAGE_INDEX: 0 if cursor is None else 1,
            A.CATALOG_PAGE_TOOL_COUNT: 2,
            **_codec.encode_page(Page(cursor=cursor, next_cursor=following)),
        }
        if following is None:
            page[A.CATALOG_DIGEST] = DIGEST
        spans.emit("tools/list", page, -10.0 + index, -10.0 + index + 0.1)
    ends = [s for s in pipeline.named("tools/list") if A.CATALOG_VERDICT in attrs(s)]
    assert [_catalog(s) for s in ends] == [("converged", "ok"), ("converged", "ok")]
    pipeline.provider.shutdown()
