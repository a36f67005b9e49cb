"""Pure helpers of the core: failure classification by type, the one chain walk, bounds."""

from __future__ import annotations

import asyncio
import socket
import ssl

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.client.auth.exceptions import OAuthFlowError

from otel_mcp_health.core.bounds import OVERFLOW, LabelBudget, cap, cap_names
from otel_mcp_health.core.catalog import chain_defect
from otel_mcp_health.core.evidence import Discovery, Page
from otel_mcp_health.core.failures import (
    classify_transport_failure,
    is_cancellation,
    parse_www_authenticate,
)
from otel_mcp_health.core.traversal import CursorChain


def _caused(outer: BaseException, inner: BaseException) -> BaseException:
    outer.__cause__ = inner
    return outer


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (_caused(httpx2.ConnectError("x"), socket.gaierror("y")), ("dns_failure", False, False)),
        (httpx2.ConnectError("x"), ("connection_lost", False, False)),
        (_caused(httpx2.ReadError("x"), ConnectionResetError()), ("connection_reset", None, False)),
        (
            _caused(httpx2.ConnectError("x"), ConnectionRefusedError()),
            ("connection_refused", False, False),
        ),
        (ssl.SSLCertVerificationError("bad"), ("tls_failure", None, False)),
        (httpx2.ReadError("x"), ("connection_lost", None, False)),
        (ExceptionGroup("g", [OAuthFlowError("x")]), (None, None, True)),
        (ValueError("nothing we know"), (None, None, False)),
    ],
)
def test_transport_failures_by_type(exc: BaseException, expected: tuple[object, ...]) -> None:
    found = classify_transport_failure(exc)
    assert (found.outcome, found.written, found.oauth) == expected


def _httpx_v1(name: str, base: type[BaseException] = Exception) -> BaseException:
    """An exception of ``httpx`` (mcp 1.x's HTTP client) by class name, as the core sees it."""
    return type(name, (base,), {"__module__": "httpx._exceptions"})("x")


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (_caused(_httpx_v1("ConnectError"), socket.gaierror("y")), ("dns_failure", False, False)),
        (_httpx_v1("ConnectTimeout"), ("connection_lost", False, False)),
        (_httpx_v1("TransportError"), ("connection_lost", None, False)),
    ],
)
def test_mcp_1x_transport_failures_by_type(
    exc: BaseException, expected: tuple[object, ...]
) -> None:
    found = classify_transport_failure(exc)
    assert (found.outcome, found.written, found.oauth) == expected


def test_cancellations_are_recognised_by_type() -> None:
    assert is_cancellation(asyncio.CancelledError())
    assert not is_cancellation(TimeoutError())


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, (None, ())),
        ('Bearer error="invalid_token", error_description="secret"', ("invalid_token", ())),
        ('Bearer error="insufficient_scope", scope="a b"', ("insufficient_scope", ("a", "b"))),
        ('Bearer error="made_up"', (None, ())),
        ('Bearer scope="ok \x01bad"', (None, ("ok",))),
    ],
)
def test_www_authenticate_keeps_codes_and_scope_names_only(
    header: str | None, expected: tuple[object, ...]
) -> None:
    assert parse_www_authenticate(header) == expected


# ----------------------------------------------------------------------------------------------
# The incremental chain walk equals a walk over every recorded page (the former algorithm)
# ----------------------------------------------------------------------------------------------
def _walk_all(pages: list[Page], completed: bool) -> str | None:
    if not pages:
        return None if completed else "cursor_remaining"
    seen: set[str | None] = set()
    expected: str | None = None
    for index, page in enumerate(pages):
        if page.failed:
            return "page_failed"
        if index > 0 and page.cursor in seen:
            return "cursor_loop"
        if page.cursor != expected:
            return "cursor_gap"
        seen.add(page.cursor)
        expected = page.next_cursor
    if expected is not None:
        return "cursor_remaining"
    return None if completed else "completion_unrecorded"


_CURSORS = st.sampled_from([None, "a", "b", "c", "d"])
_PAGES = st.lists(
    st.builds(Page, cursor=_CURSORS, next_cursor=_CURSORS, failed=st.booleans()), max_size=8
)


@given(pages=_PAGES, completed=st.booleans())
def test_the_incremental_walk_equals_the_whole_walk(pages: list[Page], completed: bool) -> None:
    discovery = Discovery(completed_at=1 if completed else None, pages=tuple(pages))
    assert chain_defect(discovery) == _walk_all(pages, completed)
    chain = CursorChain()
    for page in pages:
        chain.add(page.cursor, page.next_cursor, failed=page.failed)
    live = Discovery(completed_at=discovery.completed_at, chain=chain.summary())
    assert chain_defect(live) == _walk_all(pages, completed)


_MANY_CURSORS = st.one_of(st.none(), st.integers(0, 40).map(str))


@given(
    pages=st.lists(
        st.builds(Page, cursor=_MANY_CURSORS, next_cursor=_MANY_CURSORS, failed=st.just(False)),
        max_size=60,
    ),
    completed=st.booleans(),
)
def test_the_sorted_walk_equals_the_whole_walk_on_long_chains(
    pages: list[Page], completed: bool
) -> None:
    """The walk keeps its cursor hashes sorted (a binary search per page): the same defects."""
    chain = CursorChain()
    for page in pages:
        chain.add(page.cursor, page.next_cursor)
    live = Discovery(completed_at=1 if completed else None, chain=chain.summary())
    assert chain_defect(live) == _walk_all(pages, completed)


@pytest.mark.parametrize("back_to", [0, 1, 499, 998])
def test_a_loop_back_to_any_earlier_page_of_a_long_chain_is_found(back_to: int) -> None:
    cursors = [None, *(f"c{index}" for index in range(1, 1000))]
    chain = CursorChain(max_pages=1001)  # room for the page that loops
    for cursor, next_cursor in zip(cursors, [*cursors[1:], cursors[back_to]], strict=True):
        chain.add(cursor, next_cursor)
    if back_to == 0:  # the first page has no cursor: a nextCursor of None ends the chain
        assert chain.intact
        assert chain.summary().verdict(completed=True) is None
        return
    assert chain.intact
    chain.add(cursors[back_to], "elsewhere")
    assert chain.defect == "cursor_loop"


def test_a_chain_longer_than_the_cap_is_never_complete() -> None:
    chain = CursorChain(max_pages=3)
    links = [(None, "1"), ("1", "2"), ("2", "3"), ("3", None)]
    for cursor, next_cursor in links:
        chain.add(cursor, next_cursor)
    assert chain.truncated
    assert chain.summary().verdict(completed=True) == "cursor_remaining"


def test_bounds() -> None:
    assert cap("short") == "short"
    a, b = cap("x" * 1000 + "a"), cap("x" * 1000 + "b")
    assert len(a) == len(b) == 128
    assert a != b
    assert len(cap_names(["n"] * 40)) == 16
    budget = LabelBudget(["tool"], limit=2)
    seen = [budget.apply({"tool": t, "other": t})["tool"] for t in ("a", "b", "c", "a")]
    assert seen == ["a", "b", OVERFLOW, "a"]
    assert budget.apply({"tool": "z", "other": "z"})["other"] == "z"
