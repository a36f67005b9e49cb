"""The processor's incremental verdicts equal an oracle's re-derivation from the whole history.

The processor keeps per session and per server only what the next span needs, and memoizes
judgements. The oracle (``contract_oracle.ContractOracle``, tests only) shares none of that code:
it keeps every span it was given and, for each one, derives the verdict attributes afresh from
docs/model.md (the session's handshake, traversals, signals, installs and calls, the server each
session names, inheritance from the server's traversals, who could hear a change, spans after a
session's end) with the pure core classifiers. The same recorded spans are replayed into the
unmodified ``McpHealthSpanProcessor`` and into the oracle, and every verdict attribute the oracle
derives must be exported as it derived it: over every row of the parity scenario table and over
a hypothesis stream of up to four sessions of up to three servers.

Separately, the processor with its memos and the processor without them (every call decoded and
judged afresh, every catalog verdict classified afresh) export the same spans and metrics.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.trace import SpanKind
from tests.processor.replay import Recorder, assert_oracle_agrees, replay
from tests.processor.test_parity import SCENARIOS, Scenario, emit
from tests.support.processor_helpers import DIGEST, OTHER_DIGEST, SessionSpans

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.evidence import (
    AuthorizationEvidence,
    ExecutionEvidence,
    HandshakeEvidence,
    InstallCheck,
    Page,
    TransportEvidence,
)
from otel_mcp_health.core.reasons import Reason
from otel_mcp_health.core.vocabulary import AuthError, OutcomeResult, TransportOutcome


def _assert_same(record: Callable[[Recorder], None]) -> None:
    recorder = Recorder()
    record(recorder)
    events = recorder.collect.events
    assert_oracle_agrees(events)
    memoized, memoized_points = replay(events)
    fresh, fresh_points = replay(events, memoized=False)
    assert [dict(s.attributes or {}) for s in memoized] == [dict(s.attributes or {}) for s in fresh]
    assert memoized_points == fresh_points


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_every_scenario_row_is_judged_as_the_oracle_judges_it(scenario: Scenario) -> None:
    _assert_same(lambda recorder: emit(scenario, recorder))  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------
# A hypothesis stream of sessions and servers
# ----------------------------------------------------------------------------------------------
_CURSORS = st.sampled_from([None, "c1", "c2", "c3"])
_CHANNELS = st.sampled_from([None, None, A.CHANNEL_HTTP_GET_STREAM, A.CHANNEL_LISTEN_STREAM])
_HANDSHAKE = st.fixed_dictionaries(
    {
        "kind": st.just("handshake"),
        "list_changed": st.booleans(),
        "tools": st.booleans(),
        "negotiated": st.sampled_from(["2025-11-25", "1999-01-01", None]),
        # a re-handshake names its slot's server again (a session never changes servers), or
        # none at all; sessions of one server share its catalog state
        "server": st.sampled_from(["same", "same", None]),
        "status": st.sampled_from([200, 200, 200, 401]),  # a 401 fails the handshake
        # where it hears list_changed (None: its own stream, over stdio or SSE)
        "channel": _CHANNELS,
    }
)
_PAGE = st.fixed_dictionaries(
    {
        "kind": st.just("page"),
        # next: the session's traversal goes on (a new one starts when none is open), its last
        # page when ``done``; fail: the next page failed; any: random cursors (gaps, loops)
        "shape": st.sampled_from(["next", "next", "next", "next", "next", "fail", "any"]),
        "done": st.booleans(),
        "cursor": _CURSORS,
        "next": _CURSORS,
        "digest": st.sampled_from([DIGEST, DIGEST, DIGEST, DIGEST, OTHER_DIGEST, None]),
    }
)
_CALL = st.fixed_dictionaries(
    {
        "kind": st.just("call"),
        "tool": st.sampled_from(["create_ticket", "lookup"]),
        "outcome": st.sampled_from(["ok", "connection_lost", "http_error", None]),
        "status": st.sampled_from([200, 401, 403, 503, None]),
        "is_error": st.sampled_from([True, False, None]),
        "timed_out": st.booleans(),
        "read_only": st.sampled_from([True, False, None]),
        "contract": st.sampled_from(["ok", "unknown_tool", "missing_required_argument", None]),
        "receipt": st.sampled_from(["passed", "failed", None]),
        "duration": st.sampled_from([0.1, 45.0]),
    }
)
_SIGNAL = st.fixed_dictionaries({"kind": st.just("signal")})
#: A GET or subscriptions/listen stream of the session attached or ended.
_CHANNEL = st.fixed_dictionaries({"kind": st.just("channel"), "opened": st.booleans()})
_END = st.fixed_dictionaries({"kind": st.just("end")})
_INSTALL = st.fixed_dictionaries(
    {
        "kind": st.just("install"),
        "digest": st.sampled_from([DIGEST, DIGEST, DIGEST, OTHER_DIGEST, None]),
        # compared tool by tool with a discovery of this many tools (a subset when fewer
        # are installed), which had this digest; some installed tools changed or unlisted
        "check": st.none()
        | st.fixed_dictionaries(
            {
                "installed": st.integers(0, 3),
                "discovered": st.integers(0, 3),
                "changed": st.sampled_from([(), ("lookup",)]),
                "unlisted": st.sampled_from([(), ("gone",)]),
                "digest": st.sampled_from([DIGEST, OTHER_DIGEST, None]),
            }
        ),
    }
)
_SLOTS = ("s1", "s2", "s3")
#: The handshake a slot's sessions open with: mostly of server a.
_OPENING = st.fixed_dictionaries(
    {
        "kind": st.just("handshake"),
        "list_changed": st.sampled_from([True, True, False]),
        "tools": st.just(True),
        "negotiated": st.just("2025-11-25"),
        "server": st.sampled_from(["a", "a", "b", "c", None]),
        "status": st.just(200),
        "channel": _CHANNELS,
    }
)
_EVENT = st.tuples(
    st.sampled_from(_SLOTS),
    st.sampled_from(
        [0.5, 0.5, 10.0, 10.0, 400.0]
    ),  # seconds since the last event (400: past max age)
    # mostly healthy evidence, so that what one session does shows in another
    st.one_of(_PAGE, _CALL, _SIGNAL, _PAGE, _CALL, _SIGNAL, _INSTALL, _HANDSHAKE, _END, _CHANNEL),
)
#: What may still arrive for a session after its end span (a framework installing the tools it
#: listed after closing the listing session); anything else starts a new session in its slot.
_AFTER_END = frozenset({"install"})


def _page(event: dict[str, Any], previous: str | None) -> Page:
    """The page an event's shape asks for, after a page whose next cursor was ``previous``."""
    shape, after = event["shape"], previous or "c1"
    if shape == "next":
        started = previous is not None
        shape = (
            ("last" if event["done"] else "more")
            if started
            else ("whole" if event["done"] else "first")
        )
    if shape == "whole":
        return Page(cursor=None, next_cursor=None)
    if shape == "first":
        return Page(cursor=None, next_cursor="c1")
    if shape == "more":
        return Page(cursor=after, next_cursor=f"{after}+")
    if shape == "last":
        return Page(cursor=after, next_cursor=None)
    if shape == "fail":
        return Page(cursor=after, failed=True, error_code=-32602)
    return Page(cursor=event["cursor"], next_cursor=event["next"])


def _page_attributes(page: Page, event: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = {A.MCP_METHOD_NAME: "tools/list", A.EVIDENCE_ORIGIN: "application"}
    attrs.update(_codec.encode_page(page))
    if page.cursor is None:
        attrs[A.CATALOG_PAGE_INDEX] = 0
    if page.next_cursor is None and not page.failed and event["digest"] is not None:
        attrs[A.CATALOG_DIGEST] = event["digest"]
    return attrs


_FINDINGS = {
    "ok": None,
    "unknown_tool": Reason.UNKNOWN_TOOL_CALLED,
    "missing_required_argument": Reason.MISSING_REQUIRED_ARGUMENT,
}


def _call_attributes(event: dict[str, Any]) -> dict[str, Any]:
    """Observations as the instrumentation writes them, each through the codec's encoder."""
    attrs = _codec.encode_delivery(event["outcome"], True)
    if event["status"] is not None:
        attrs.update(
            _codec.encode_authorization(AuthorizationEvidence(http_status=event["status"]))
        )
    execution = ExecutionEvidence(is_error=event["is_error"], timed_out=event["timed_out"])
    attrs.update(_codec.encode_execution(execution))
    if event["read_only"] is not None:
        attrs.update(_codec.encode_read_only(event["read_only"]))
    if event["contract"] is not None:
        finding = _FINDINGS[event["contract"]]
        missing = ["title"] if finding == Reason.MISSING_REQUIRED_ARGUMENT else []
        attrs.update(_codec.encode_contract(finding, missing))
    if event["receipt"] is not None:
        result = OutcomeResult(event["receipt"])
        attrs.update(_codec.encode_receipt("destination_query", result, None))
    return attrs


def _server_attributes(server: str | None) -> dict[str, Any]:
    """A handshake's server identity (docs/model.md#scope), or none at all."""
    if server is None:
        return {}
    return {A.SERVER_TARGET_KEY: f"target-{server}", A.SERVER_NAME: f"server-{server}"}


def _channel_attributes(channel: str | None) -> dict[str, Any]:
    """Where a handshake's session hears ``list_changed`` (none named: its own stream)."""
    return {} if channel is None else {A.SESSION_NOTIFICATION_CHANNEL: channel}


def _install_attributes(event: dict[str, Any]) -> dict[str, Any]:
    """An install as a framework hook reports it: its digest (or why it has none) and, when
    the hook compared it with a discovery, that comparison."""
    if event["digest"] is None:
        return {A.CATALOG_DIGEST_ERROR: "tool_not_an_object"}
    attrs: dict[str, Any] = {
        A.CATALOG_CLIENT_DIGEST: event["digest"],
        A.CATALOG_CLIENT_SOURCE: "registered",
    }
    check = event["check"]
    if check is not None:
        compared = InstallCheck(
            installed=check["installed"],
            discovered=check["discovered"],
            changed=check["changed"],
            unlisted=check["unlisted"],
            discovery_digest=check["digest"],
        )
        attrs.update(_codec.encode_install_check(compared))
    return attrs


def _failed_handshake(spans: SessionSpans, at: float, event: dict[str, Any]) -> None:
    """A handshake refused with HTTP 401 (``invalid_token``): no session established."""
    evidence = HandshakeEvidence(
        requested_version="2025-11-25",
        transport=TransportEvidence(
            outcome=TransportOutcome.OK, http_status=401, request_written=True
        ),
        authorization=AuthorizationEvidence(http_status=401, error=AuthError.INVALID_TOKEN),
    )
    attrs = {A.MCP_METHOD_NAME: "initialize", A.SESSION_ERA: "initialize"}
    attrs.update(_codec.encode_handshake(evidence))
    attrs.update(_server_attributes(event["server"]))
    spans.emit("initialize", attrs, at)


def _emit_event(
    spans: SessionSpans, at: float, event: dict[str, Any], cursors: dict[str, str | None]
) -> None:
    """Emit one event of ``spans``' session (``cursors``: each session's last next cursor)."""
    kind = event["kind"]
    if kind == "handshake" and event["status"] == 401:
        _failed_handshake(spans, at, event)
    elif kind == "handshake":
        spans.handshake(
            start=at,
            negotiated=event["negotiated"],
            list_changed=event["list_changed"],
            tools=event["tools"],
            **_server_attributes(event["server"]),
            **_channel_attributes(event.get("channel")),
        )
    elif kind == "page":
        page = _page(event, cursors.get(spans.key))
        cursors[spans.key] = page.next_cursor
        spans.emit("tools/list", _page_attributes(page, event), at, at + 0.1)
    elif kind == "call":
        attrs = _call_attributes(event)
        spans.call(event["tool"], ok=False, start=at, end=at + event["duration"], **attrs)
    elif kind == "signal":
        spans.signal(at)
    elif kind == "channel":
        channel = _codec.encode_channel(A.CHANNEL_HTTP_GET_STREAM, opened=event["opened"])
        spans.emit(A.CHANNEL_SPAN_NAME, channel, at, kind=SpanKind.INTERNAL)
    elif kind == "install":
        spans.emit(A.INSTALL_SPAN_NAME, _install_attributes(event), at, kind=SpanKind.INTERNAL)
    else:
        spans.end_session(at)


@dataclass
class _Slots:
    """Session slots: a slot whose session ended starts a new session (a new key) for anything
    but what may arrive after an end. A new session that does not start with a handshake gets
    one first, naming its slot's server (``opening``: its handshake event), so that sessions of
    one server meet often."""

    recorder: Recorder
    opening: dict[str, dict[str, Any]]
    sessions: dict[str, SessionSpans] = field(default_factory=dict)
    ended: set[str] = field(default_factory=set)
    generation: dict[str, int] = field(default_factory=dict)
    cursors: dict[str, str | None] = field(default_factory=dict)

    def emit(self, slot: str, at: float, event: dict[str, Any]) -> None:
        kind = event["kind"]
        if kind == "handshake" and event["server"] == "same":
            event = {**event, "server": self.opening[slot]["server"]}
        current = self.sessions.get(slot)
        if current is None or (current.key in self.ended and kind not in _AFTER_END):
            generation = self.generation[slot] = self.generation.get(slot, 0) + 1
            current = self.sessions[slot] = SessionSpans(
                self.recorder.tracer, key=f"{slot}.{generation}"
            )
            if kind != "handshake":
                _emit_event(current, at - 0.25, self.opening[slot], self.cursors)
        _emit_event(current, at, event, self.cursors)
        if kind == "end":
            self.ended.add(current.key)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    openings=st.fixed_dictionaries(dict.fromkeys(_SLOTS, _OPENING)),
    events=st.lists(_EVENT, min_size=10, max_size=30),
)
def test_a_stream_of_sessions_is_judged_as_the_oracle_judges_it(
    openings: dict[str, dict[str, Any]], events: list[tuple[str, float, dict[str, Any]]]
) -> None:
    def record(recorder: Recorder) -> None:
        slots = _Slots(recorder, openings)
        at = -10_000.0
        for slot, step, event in events:
            at += step
            slots.emit(slot, at, event)

    _assert_same(record)


# ----------------------------------------------------------------------------------------------
# The disagreements the oracle found, each as its minimal stream (every session of server a)
# ----------------------------------------------------------------------------------------------
def _handshake(*, status: int = 200) -> dict[str, Any]:
    return {
        "kind": "handshake",
        "list_changed": True,
        "tools": True,
        "negotiated": "2025-11-25",
        "server": "a",
        "status": status,
    }


def _page_event(shape: str, cursor: str | None = None, next_cursor: str | None = None) -> Any:
    return {"kind": "page", "shape": shape, "cursor": cursor, "next": next_cursor, "digest": DIGEST}


def _call_event(**changes: Any) -> dict[str, Any]:
    call = {
        "kind": "call",
        "tool": "create_ticket",
        "outcome": "ok",
        "status": 200,
        "is_error": False,
        "timed_out": False,
        "read_only": None,
        "contract": None,
        "receipt": None,
        "duration": 0.1,
    }
    return {**call, **changes}


#: (id, events, what the last span must carry)
_FOUND = (
    (
        # s1's only traversal ends on a page that closes it with a gap: s2 inherits that
        # (it read unverifiable / no_discovery: the server never saw the traversal)
        "traversal-ending-on-a-gap-is-the-servers",
        [("s1", 1.0, _page_event("any", "c1", None)), ("s2", 1.0, _call_event())],
        {A.CATALOG_VERDICT: "incomplete", A.CATALOG_REASON: "cursor_gap"},
    ),
    (
        # ... or a loop (it read cursor_remaining: the traversal as its last page but one left it)
        "traversal-ending-on-a-loop-is-the-servers",
        [
            ("s1", 1.0, _page_event("first")),
            ("s1", 1.0, _page_event("any", "c1", "c1")),
            ("s1", 1.0, _page_event("any", "c1", None)),
            ("s2", 1.0, _call_event()),
        ],
        {A.CATALOG_VERDICT: "incomplete", A.CATALOG_REASON: "cursor_loop"},
    ),
    (
        # s2 starts a traversal after s1 started one; s1 finishes first: the latest traversal
        # (the last one started) is unfinished (it read converged: the last page to arrive won)
        "latest-traversal-is-the-last-started",
        [
            ("s1", 1.0, _page_event("first")),
            ("s2", 1.0, _page_event("first")),
            ("s1", 1.0, _page_event("last")),
            ("s3", 1.0, _call_event()),
        ],
        {A.CATALOG_VERDICT: "incomplete", A.CATALOG_REASON: "cursor_remaining"},
    ),
    (
        # two traversals complete while both were under way: the one started last (s1's) is
        # what the core judges against, and the inherited age is its age (it was the age of
        # s2's, which completed last: 1.0 s)
        "of-two-complete-traversals-the-last-started-is-the-servers",
        [
            ("s2", 1.0, _page_event("first")),
            ("s1", 1.0, _page_event("first")),
            ("s1", 1.0, _page_event("last")),
            ("s2", 1.0, _page_event("last")),
            ("s3", 1.0, _call_event()),
        ],
        {A.CATALOG_VERDICT: "converged", A.CATALOG_INHERITED_AGE_S: 2.0},
    ),
    (
        # a 401 on initialize, then an answered initialize: an authorized exchange succeeded
        # since, so a call without authorization evidence is not needs_auth (it was)
        "answered-handshake-clears-an-authorization-failure",
        [
            ("s1", 1.0, _handshake(status=401)),
            ("s1", 1.0, _handshake()),
            ("s1", 1.0, _page_event("whole")),
            ("s1", 1.0, _call_event(status=None)),
        ],
        {A.VERDICT: "unverified", A.CALL_FIRST_FAILED_LAYER: "none"},
    ),
    (
        # s2 inherits and calls an unknown tool; s1 lists again: that finding was checked
        # against the older catalog (it kept s2 stale / unknown_tool_called)
        "new-discovery-of-the-server-clears-an-inheritors-findings",
        [
            ("s1", 1.0, _page_event("whole")),
            ("s2", 1.0, _call_event(contract="unknown_tool")),
            ("s1", 1.0, _page_event("whole")),
            ("s2", 1.0, _call_event(contract="ok")),
        ],
        {A.CATALOG_VERDICT: "converged", A.VERDICT: "unverified"},
    ),
    (
        # eight calls missing an argument, then one of an unknown tool: the unknown tool
        # outranks the missing argument (it read missing_required_argument: the ninth finding
        # was dropped at the cap)
        "a-finding-of-a-new-kind-is-kept-past-the-cap",
        [
            ("s1", 1.0, _page_event("whole")),
            *[("s1", 1.0, _call_event(contract="missing_required_argument"))] * 8,
            ("s1", 1.0, _call_event(contract="unknown_tool")),
        ],
        {A.CATALOG_REASON: "unknown_tool_called"},
    ),
    (
        # a first traversal waits for c1; a second one completes; a third walks c1, c1+ and
        # c1++; then c1 again with the last page: it continues the first traversal, which waits
        # for it (the third already walked c1, but a cursor goes to the open chain that waits
        # for it), and that one completes. The latest traversal is still the third, which
        # started after the session's complete discovery ended: nextCursor remains (it read
        # cursor_loop: every later page joined the latest traversal)
        "a-cursor-continues-the-open-traversal-waiting-for-it",
        [
            ("s1", 1.0, _page_event("first")),
            ("s1", 1.0, _page_event("whole")),
            ("s1", 1.0, _page_event("first")),
            ("s1", 1.0, _page_event("any", "c1", "c1+")),
            ("s1", 1.0, _page_event("any", "c1+", "c1++")),
            ("s1", 1.0, _page_event("any", "c1++", "c1+++")),
            ("s1", 1.0, _page_event("any", "c1", None)),
        ],
        {A.CATALOG_VERDICT: "incomplete", A.CATALOG_REASON: "cursor_remaining"},
    ),
    (
        # the same without the complete traversal in between: the first traversal completes
        # while the one started after it is still walking; it is what the agent got, and it
        # stands for the latest until that one ends (it read cursor_loop)
        "a-concurrent-complete-traversal-stands-for-the-one-still-walking",
        [
            ("s1", 1.0, _page_event("first")),
            ("s1", 1.0, _page_event("first")),
            ("s1", 1.0, _page_event("any", "c1", "c1+")),
            ("s1", 1.0, _page_event("any", "c1", None)),
        ],
        {A.CATALOG_VERDICT: "converged", A.CATALOG_REASON: "ok"},
    ),
)


@pytest.mark.parametrize(
    ("events", "last"), [case[1:] for case in _FOUND], ids=[case[0] for case in _FOUND]
)
def test_what_the_oracle_found(
    events: list[tuple[str, float, dict[str, Any]]], last: dict[str, Any]
) -> None:
    recorder = Recorder()
    slots = _Slots(recorder, {slot: _handshake() for slot in _SLOTS})
    at = 0.0
    for slot, step, event in events:
        at += step
        slots.emit(slot, at, event)
    events = recorder.collect.events
    assert_oracle_agrees(events)
    exported, _ = replay(events)
    assert {k: (exported[-1].attributes or {}).get(k) for k in last} == last
