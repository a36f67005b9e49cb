"""The engine's call memo (``_memo``) is exact: its key holds everything decoding reads.

The memo keys a call span's decoded evidence on the values and types of :data:`CALL_KEYS`. If a
decoder reads an attribute that is not listed (e.g. after a new piece of evidence is added), two
spans that differ only there would share a verdict: this test fails first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.server import IncidentScope, ScopeKind, ServerIdentity, ServerLabel
from otel_mcp_health.processor import _memo
from otel_mcp_health.processor._sessions import Session

#: Every attribute name the project defines (module-level string constants with a dot).
_NAMES = sorted(
    {v for v in vars(A).values() if isinstance(v, str) and "." in v and " " not in v}
    | set(_memo.CALL_KEYS)
)
_VALUES = st.one_of(
    st.booleans(),
    st.integers(-2, 600),
    st.floats(allow_nan=False),
    st.sampled_from(
        [
            "ok",
            "none",
            "pipe",
            "tcp",
            "passed",
            "failed",
            "invalid_token",
            "unknown_tool",
            "a b",
            "",
        ]
    ),
    st.lists(st.sampled_from(["x", "y"]), max_size=2).map(tuple),
)


class _Recording(Mapping[str, Any]):
    """A mapping that records every key read through it."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("decoding must not iterate over a span's attributes")

    def __len__(self) -> int:
        return len(self._data)


#: A span on which every decoder takes its longest path (every conditional read happens).
_EVERY_READ = {
    A.GEN_AI_TOOL_NAME: "lookup",
    A.TOOL_READ_ONLY: False,
    A.TRANSPORT_OUTCOME: "ok",
    A.HTTP_RESPONSE_STATUS_CODE: 401,
    A.TRANSPORT_REQUEST_WRITTEN: True,
    A.NETWORK_TRANSPORT: "tcp",
    A.AUTH_ERROR: "invalid_token",
    A.AUTH_REQUIRED_SCOPES: ("read",),
    A.RPC_RESPONSE_STATUS_CODE: -32602,
    A.PROTOCOL_RESULT_VALID: True,
    A.CALL_IS_ERROR: False,
    A.CALL_TIMED_OUT: False,
    A.CALL_OUTPUT_SCHEMA_VALID: True,
    A.EFFECT_OBSERVED: True,
    A.EFFECT_METHOD: "query",
    A.OUTCOME_METHOD: "receipt",
    A.OUTCOME_RESULT: "passed",
    A.OUTCOME_CONFIDENCE: 0.9,
    A.CALL_CONTRACT: A.CONTRACT_MISSING_REQUIRED_ARGUMENT,
    A.CALL_MISSING_ARGUMENTS: ("query",),
    A.OFFERED_TOOL_COUNT: 2,
    A.OFFERED_DISCOVERED_TOOL_COUNT: 3,
    A.OFFERED_DISCOVERY_DIGEST: "sha256:x",
    A.OFFERED_CHANGED: ("lookup",),
    A.OFFERED_UNLISTED: ("gone",),
    A.OFFERED_CHANGED_MEMBERS: ("description",),
    A.OFFERED_EARLIER_CATALOG: False,
}


@settings(max_examples=400)
@example(_EVERY_READ, {})
@given(
    st.fixed_dictionaries({}, optional=dict.fromkeys(_memo.CALL_KEYS, _VALUES)),
    st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=6),
)
def test_decoding_reads_only_the_memo_keys(listed: dict[str, Any], other: dict[str, Any]) -> None:
    recording = _Recording({**other, **listed})
    _memo.decode(recording)
    assert recording.read <= set(_memo.CALL_KEYS)


@given(st.dictionaries(st.sampled_from(_memo.CALL_KEYS), _VALUES, max_size=12))
def test_a_memoized_decoding_equals_a_fresh_one(attrs: dict[str, Any]) -> None:
    memo = _memo.CallMemo()
    first = memo.decoded(attrs)
    again = memo.decoded(dict(attrs))
    assert again is first
    fresh = _memo.decode(attrs)
    assert (first.call, first.finding, first.receipt, first.method) == (
        fresh.call,
        fresh.finding,
        fresh.receipt,
        fresh.method,
    )


def test_equal_values_of_different_types_are_different_shapes() -> None:
    memo = _memo.CallMemo()
    as_bool = memo.decoded({A.CALL_IS_ERROR: True})
    as_int = memo.decoded({A.CALL_IS_ERROR: 1})
    assert as_bool is not as_int
    assert as_bool.call.execution is not None
    assert as_bool.call.execution.is_error is True
    assert as_int.call.execution is None


def test_an_absent_key_differs_from_any_value() -> None:
    memo = _memo.CallMemo()
    absent = memo.decoded({})
    present = memo.decoded({A.RPC_RESPONSE_STATUS_CODE: None})
    assert absent is not present
    assert present.call.protocol is None


def test_an_unhashable_value_is_decoded_without_the_memo() -> None:
    memo = _memo.CallMemo()
    attrs = {A.AUTH_REQUIRED_SCOPES: ["read", "write"], A.NETWORK_TRANSPORT: "tcp"}
    decoded = memo.decoded(attrs)
    assert decoded.call == _memo.decode(attrs).call
    assert memo.decoded(attrs) is not decoded


def test_tokens_are_never_reused() -> None:
    memo = _memo.CallMemo()
    first = memo.token(("catalog", "a"))
    assert memo.token(("catalog", "a")) == first
    for n in range(_memo.MAX_TOKENS + 1):
        memo.token(n)
    assert memo.token(("catalog", "b")) != first
    assert memo.token(("catalog", "a")) != first  # re-interned: a new token, never an old one


def test_the_judgements_are_bounded() -> None:
    memo = _memo.CallMemo()
    decoded = memo.decoded({A.GEN_AI_TOOL_NAME: "lookup"})
    judged = _memo.Judged(
        call=decoded.call,
        result=None,  # type: ignore[arg-type]  # never read here
        catalog_verdict=None,  # type: ignore[arg-type]
        verdicts={},
        authorization=None,
    )
    for n in range(_memo.MAX_JUDGEMENTS):
        memo.remember(decoded, (n,), judged)
    assert len(decoded.judged) == _memo.MAX_JUDGEMENTS
    assert memo.decoded({A.GEN_AI_TOOL_NAME: "lookup"}) is decoded
    memo.remember(decoded, ("one more",), judged)
    assert memo.decoded({A.GEN_AI_TOOL_NAME: "lookup"}) is not decoded  # every shape forgotten


_NOT_SERVER_KEYS = [name for name in _NAMES if name not in _memo.SERVER_KEYS]
_KNOWN = ServerIdentity(label=ServerLabel(name="f"))
_SERVER_VALUES = st.one_of(
    _VALUES, st.sampled_from(["127.0.0.1", "443", "x" * 300, "mcp.example.test", 443, 0, True])
)


@settings(max_examples=300)
@given(
    st.fixed_dictionaries({}, optional=dict.fromkeys(_memo.SERVER_KEYS, _SERVER_VALUES)),
    st.lists(st.dictionaries(st.sampled_from(_NOT_SERVER_KEYS), _VALUES, max_size=6), max_size=3),
    st.sampled_from([ServerIdentity(), _KNOWN, ServerIdentity(target_key="k")]),
)
def test_the_server_memo_equals_the_identity_it_memoizes(
    listed: dict[str, Any], others: list[dict[str, Any]], fallback: ServerIdentity
) -> None:
    """Spans that agree on :data:`SERVER_KEYS` (values and types) share an identity, whatever
    else they carry; the memoized answer is always the fresh one."""
    memo = _memo.CallMemo()
    for other in [{}, *others]:
        attrs = {**other, **listed}
        assert memo.server(attrs, fallback) == _codec.decode_server(attrs, fallback)
    for other in others:  # the other attributes do not change a fresh identity either
        fresh = _codec.decode_server({**other, **listed}, fallback)
        assert fresh == _codec.decode_server(listed, fallback)


def test_server_identities_of_equal_values_of_different_types_differ() -> None:
    memo = _memo.CallMemo()
    labelled = memo.server({A.SERVER_ADDRESS: "h", A.SERVER_PORT: 1}, ServerIdentity())
    assert labelled == ServerIdentity(label=ServerLabel(address="h", port=1))
    assert labelled.scope == IncidentScope(ScopeKind.LABEL, "h:1")
    port_flag = memo.server({A.SERVER_ADDRESS: "h", A.SERVER_PORT: True}, ServerIdentity())
    assert port_flag.scope == IncidentScope(ScopeKind.LABEL, "h")
    assert memo.server({}, _KNOWN) == _KNOWN
    assert memo.server({A.SERVER_PORT: [1]}, _KNOWN) == _KNOWN  # unhashable: not memoized


def test_the_target_key_tells_servers_of_one_label_apart() -> None:
    """Two gateway paths on one host and port: one exported label, two identities; a span that
    does not repeat the target key keeps the one its session learned."""
    memo = _memo.CallMemo()
    label = {A.SERVER_ADDRESS: "h", A.SERVER_PORT: 1, A.SERVER_NAME: "n"}
    github = memo.server({**label, A.SERVER_TARGET_KEY: "a"}, ServerIdentity())
    jira = memo.server({**label, A.SERVER_TARGET_KEY: "b"}, ServerIdentity())
    assert github.scope is not None
    assert jira.scope is not None
    assert github.scope != jira.scope
    assert github.label == jira.label
    assert _codec.label_attributes(github.label) == label
    assert memo.server({A.SERVER_ADDRESS: "h", A.SERVER_PORT: 1}, github) == github


def test_a_sessions_last_server_identity_is_reused_only_for_the_same_key() -> None:
    """The per-session answer of :meth:`CallMemo.session_server` is dropped when the session's
    identity, a value or a value's type of :data:`SERVER_KEYS` changes: each step below is the
    fresh derivation, and fails if that part of the key were not compared."""
    memo = _memo.CallMemo()
    session = Session(key="s", last_seen=0)
    steps: list[dict[str, Any]] = [
        {A.SERVER_ADDRESS: "h", A.SERVER_PORT: 1},
        {A.SERVER_ADDRESS: "h", A.SERVER_PORT: 1},  # reused
        {A.SERVER_ADDRESS: "h", A.SERVER_PORT: True},  # a type changed
        {A.SERVER_ADDRESS: "g", A.SERVER_PORT: True},  # a value changed
        {A.SERVER_ADDRESS: "h", A.SERVER_PORT: 1, A.SERVER_NAME: "n"},  # a value changed
        {A.SERVER_ADDRESS: "h", A.SERVER_PORT: [2]},  # unhashable: never kept
        {A.SERVER_ADDRESS: "h", A.SERVER_PORT: [2]},
    ]
    for attrs in steps:  # the session's identity stays the same object
        assert memo.session_server(attrs, session) == _codec.decode_server(attrs, session.server)
    session.server = _KNOWN  # another identity, same attributes as last time
    assert memo.session_server(steps[-1], session) == _codec.decode_server(steps[-1], _KNOWN)
    session.server = ServerIdentity()
    assert memo.session_server({}, session) == ServerIdentity()
    session.server = _KNOWN
    assert memo.session_server({}, session) == _KNOWN


def _same_decoding(found: _memo.Decoded, attrs: dict[str, Any]) -> bool:
    fresh = _memo.decode(attrs)
    return (found.call, found.finding, found.receipt, found.method, found.offered) == (
        fresh.call,
        fresh.finding,
        fresh.receipt,
        fresh.method,
        fresh.offered,
    )


def test_a_sessions_last_decoded_shape_is_reused_only_for_the_same_key() -> None:
    """The per-session answer of :meth:`CallMemo.session_decoded` is dropped when a value or a
    value's type of :data:`CALL_KEYS` changes, and when the memo forgot its shapes (the session
    then holds the memo's own again, whose judgements the memo bounds)."""
    memo = _memo.CallMemo()
    session = Session(key="s", last_seen=0)
    steps: list[dict[str, Any]] = [
        {A.GEN_AI_TOOL_NAME: "a", A.CALL_IS_ERROR: True},
        {A.GEN_AI_TOOL_NAME: "a", A.CALL_IS_ERROR: True},  # reused
        {A.GEN_AI_TOOL_NAME: "a", A.CALL_IS_ERROR: 1},  # a type changed
        {A.GEN_AI_TOOL_NAME: "b", A.CALL_IS_ERROR: 1},  # a value changed
        {A.GEN_AI_TOOL_NAME: "b", A.AUTH_REQUIRED_SCOPES: ["x"]},  # unhashable: never kept
        {A.GEN_AI_TOOL_NAME: "b", A.AUTH_REQUIRED_SCOPES: ["x"]},
    ]
    for attrs in steps:
        assert _same_decoding(memo.session_decoded(attrs, session), attrs)
    attrs = steps[0]
    kept = memo.session_decoded(attrs, session)
    assert kept is memo.decoded(attrs) is memo.session_decoded(attrs, session)
    judged = _memo.Judged(
        call=kept.call,
        result=None,  # type: ignore[arg-type]  # never read here
        catalog_verdict=None,  # type: ignore[arg-type]
        verdicts={},
        authorization=None,
    )
    for n in range(_memo.MAX_JUDGEMENTS + 1):  # one past the bound: every shape is forgotten
        memo.remember(kept, (n,), judged)
    assert memo.session_decoded(attrs, session) is memo.decoded(attrs) is not kept
