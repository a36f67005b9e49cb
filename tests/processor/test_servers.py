"""Catalog state per server across sessions (docs/model.md#scope), span by span.

Each test emits the sessions of one server (the same ``mcp_health.server.target_key`` and server
name on their handshakes) the way the instrumentation records them, and reads the judged copies.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import SpanKind
from tests.support.processor_helpers import DIGEST, Pipeline, SessionSpans

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.evidence import Discovery
from otel_mcp_health.processor._servers import ServerCatalogs

SERVER = {A.SERVER_TARGET_KEY: "0123456789abcdef", A.SERVER_NAME: "tickets"}
OTHER = {A.SERVER_TARGET_KEY: "fedcba9876543210", A.SERVER_NAME: "tickets"}


def _session(pipeline: Pipeline, key: str, **handshake: Any) -> SessionSpans:
    spans = SessionSpans(pipeline.tracer, key=key)
    spans.handshake(start=handshake.pop("start", -200.0), **{**SERVER, **handshake})
    return spans


def _discover(pipeline: Pipeline, key: str, *, start: float, end: bool = True) -> SessionSpans:
    spans = _session(pipeline, key, start=start - 1)
    spans.traversal([(None, "c1"), ("c1", None)], start=start)
    if end:
        spans.end_session(start + 1)
    return spans


def _last_call(pipeline: Pipeline) -> dict[str, Any]:
    return dict(pipeline.last("tools/call").attributes or {})


def test_a_fresh_session_inherits_the_servers_discovery(pipeline: Pipeline) -> None:
    _discover(pipeline, "listing", start=-100)
    _session(pipeline, "calling", start=-5).call(start=-1, end=0)
    call = _last_call(pipeline)
    assert (call[A.VERDICT], call[A.REASON]) == ("unverified", "no_outcome_verifier")
    assert call[A.CATALOG_VERDICT] == "converged"
    assert call[A.CATALOG_INHERITED] is True
    assert call[A.CATALOG_INHERITED_AGE_S] == pytest.approx(99.7)  # completed at -99.7


def test_a_session_with_its_own_discovery_is_not_inherited(pipeline: Pipeline) -> None:
    spans = _discover(pipeline, "own", start=-100, end=False)
    spans.call(start=-1, end=0)
    assert A.CATALOG_INHERITED not in _last_call(pipeline)


def test_another_servers_discovery_is_not_inherited(pipeline: Pipeline) -> None:
    _discover(pipeline, "listing", start=-100)
    _session(pipeline, "calling", start=-5, **OTHER).call(start=-1, end=0)
    call = _last_call(pipeline)
    assert (call[A.VERDICT], call[A.REASON]) == ("stale_catalog", "catalog_no_discovery")
    assert A.CATALOG_INHERITED not in call


def test_a_signal_in_one_session_makes_every_session_stale(pipeline: Pipeline) -> None:
    own = _discover(pipeline, "own", start=-100, end=False)
    _session(pipeline, "hearing", start=-60).signal(-50)
    own.call(start=-2, end=-1)
    assert _last_call(pipeline)[A.REASON] == "catalog_signal_after_discovery"
    _session(pipeline, "fresh", start=-5).call(start=-1, end=0)
    assert _last_call(pipeline)[A.REASON] == "catalog_signal_after_discovery"
    _discover(pipeline, "again", start=-4)
    _session(pipeline, "after", start=-1).call(start=-0.5, end=0)
    assert _last_call(pipeline)[A.CATALOG_VERDICT] == "converged"


def test_unheard_changes_hold_an_inherited_catalog_to_the_maximum_age(pipeline: Pipeline) -> None:
    # the listing session closed: from then on no session of the server hears a change
    _discover(pipeline, "listing", start=-1000)
    _session(pipeline, "late", start=-5).call(start=-1, end=0)
    call = _last_call(pipeline)
    assert call[A.VERDICT] == "stale_catalog"
    assert call[A.CATALOG_VERDICT] == "stale"
    assert call[A.CATALOG_INHERITED] is True


def test_an_open_listening_session_keeps_an_old_inherited_catalog_fresh(
    pipeline: Pipeline,
) -> None:
    _discover(pipeline, "listening", start=-1000, end=False)  # still open, hears list_changed
    _session(pipeline, "late", start=-5).call(start=-1, end=0)
    call = _last_call(pipeline)
    assert call[A.CATALOG_VERDICT] == "converged"
    assert call[A.CATALOG_INHERITED_AGE_S] == pytest.approx(999.7)


def test_a_server_without_list_changed_is_held_to_the_maximum_age(pipeline: Pipeline) -> None:
    spans = _session(pipeline, "listing", start=-1001, list_changed=False)
    spans.traversal([(None, None)], start=-1000)
    _session(pipeline, "late", start=-5, list_changed=False).call(start=-1, end=0)
    assert _last_call(pipeline)[A.CATALOG_VERDICT] == "stale"


def test_the_server_store_is_bounded() -> None:
    servers = ServerCatalogs(capacity=2)
    first = servers.touch("a")
    first.discovered(Discovery(completed_at=1), list_changed=True)
    servers.touch("b")
    servers.touch("a")  # used again: "b" is now the least recently used
    servers.touch("c")
    assert len(servers) == 2
    assert servers.touch("a") is first
    assert servers.touch("b").complete is None  # forgotten, then created anew


def test_a_listing_that_stopped_at_its_first_page_is_inherited_incomplete(
    pipeline: Pipeline,
) -> None:
    """A client that reads one page and ignores ``nextCursor`` (llama-index, ADK) listed, but
    never completely: its fresh sessions read ``incomplete``, not ``no_discovery``."""
    listing = _session(pipeline, "listing", start=-101)
    listing.traversal([(None, "c1")], start=-100)
    listing.end_session(-99)
    _session(pipeline, "calling", start=-5).call(start=-1, end=0)
    call = _last_call(pipeline)
    assert (call[A.VERDICT], call[A.CATALOG_VERDICT]) == ("stale_catalog", "incomplete")
    assert call[A.CATALOG_INHERITED] is True
    assert A.CATALOG_INHERITED_AGE_S not in call  # no complete discovery to be old


def test_spans_after_the_session_ended_belong_to_the_server(pipeline: Pipeline) -> None:
    """A framework that installs after closing its listing session (LangChain's ``get_tools()``),
    and a ``list_changed`` that arrives after the end: both reach the server, and the session
    never comes back (it was kept for an hour, in the LRU of live sessions)."""
    store = pipeline.processor._engine.sessions
    listing = _discover(pipeline, "listing", start=-100)
    assert len(store) == 0
    listing.emit(
        A.INSTALL_SPAN_NAME,
        {
            A.CATALOG_CLIENT_DIGEST: "sha256:" + "d" * 64,
            **SERVER,
            A.CATALOG_TOOL_COUNT: 2,
            A.CATALOG_CLIENT_TOOL_COUNT: 1,
            A.CATALOG_DIGEST: DIGEST,  # compared with the listing session's discovery
        },
        -90,
    )
    install = pipeline.last(A.INSTALL_SPAN_NAME).attributes or {}
    assert install[A.CATALOG_VERDICT] == "converged"  # one of the two tools, unchanged
    assert len(store) == 0
    _session(pipeline, "calling", start=-5).call(start=-4, end=-3)
    call = _last_call(pipeline)
    assert (call[A.CATALOG_VERDICT], call[A.CATALOG_CLIENT_SOURCE]) == ("converged", "digest")
    listing.signal(-2)  # the ended session heard a change on its way out: the server's catalog
    _session(pipeline, "again", start=-1.5).call(start=-1, end=0)
    assert _last_call(pipeline)[A.REASON] == "catalog_signal_after_discovery"
    assert len(store) == 2  # the two calling sessions, never the ended one


# -- who can hear a change: the notification channel (docs/model.md#scope) ---------------------
def _channel(spans: SessionSpans, at: float, *, opened: bool) -> None:
    """The ``mcp_health.channel`` span the instrumentation records when a GET stream attaches or
    ends."""
    attrs = _codec.encode_channel(A.CHANNEL_HTTP_GET_STREAM, opened=opened)
    spans.emit(A.CHANNEL_SPAN_NAME, attrs, at, kind=SpanKind.INTERNAL)


def _http_session(pipeline: Pipeline, key: str, start: float) -> SessionSpans:
    channel = {A.SESSION_NOTIFICATION_CHANNEL: A.CHANNEL_HTTP_GET_STREAM}
    return _session(pipeline, key, start=start, **channel)


def test_an_http_session_listens_only_while_its_get_stream_is_attached(
    pipeline: Pipeline,
) -> None:
    listening = _http_session(pipeline, "listening", -1002)
    _channel(listening, -1001.5, opened=True)
    listening.traversal([(None, "c1"), ("c1", None)], start=-1000)
    _http_session(pipeline, "fresh", -10).call(start=-9, end=-8)  # its own GET never attached
    assert _last_call(pipeline)[A.CATALOG_VERDICT] == "converged"  # the listener would hear
    _channel(listening, -7, opened=False)  # the server restarted: the stream is dead
    listening.call(start=-6, end=-5)
    assert _last_call(pipeline)[A.CATALOG_REASON] == "refresh_overdue"  # its own catalog
    _channel(listening, -4, opened=True)  # attached again: a change may have gone unheard
    _http_session(pipeline, "late", -3).call(start=-2, end=-1)
    call = _last_call(pipeline)
    assert (call[A.CATALOG_VERDICT], call[A.CATALOG_REASON]) == ("stale", "refresh_overdue")
    assert call[A.CATALOG_INHERITED] is True


def test_a_discovery_before_the_get_stream_attached_is_held_to_the_maximum_age(
    pipeline: Pipeline,
) -> None:
    early = _http_session(pipeline, "early", -1002)
    early.traversal([(None, "c1"), ("c1", None)], start=-1001)
    _channel(early, -999, opened=True)
    early.call(start=-1, end=0)
    assert _last_call(pipeline)[A.CATALOG_REASON] == "refresh_overdue"
    early.traversal([(None, "c1"), ("c1", None)], start=-0.9)  # listed while it can hear
    early.call(start=-0.2, end=-0.1)
    assert _last_call(pipeline)[A.CATALOG_VERDICT] == "converged"


def test_a_2026_07_28_session_hears_only_on_an_open_listen_stream(pipeline: Pipeline) -> None:
    spans = _session(pipeline, "modern", start=-1002, era="server/discover")
    spans.traversal([(None, "c1"), ("c1", None)], start=-1000)
    spans.call(start=-2, end=-1)
    assert _last_call(pipeline)[A.CATALOG_REASON] == "refresh_overdue"
