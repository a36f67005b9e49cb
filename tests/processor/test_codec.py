"""The evidence codec round-trips: ``decode(encode(evidence)) == evidence``.

Two properties per record type: every record that span attributes can express comes back equal
(records built by strategies that respect what the attributes can say: e.g. transport and
authorization share one HTTP status), and every record decoding produces from *any* attributes
re-encodes to attributes that decode to the same record (so nothing the processor reads is lost).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.trace import Event
from tests.support.request_reading import decode_request

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.evidence import (
    NOT_APPLICABLE,
    AuthorizationEvidence,
    CallEvidence,
    EffectEvidence,
    ExecutionEvidence,
    HandshakeEvidence,
    InstallCheck,
    OutcomeEvidence,
    Page,
    ProgressEvent,
    ProgressEvidence,
    ProtocolEvidence,
    RequestEvidence,
    ToolCallCheck,
    TransportEvidence,
)
from otel_mcp_health.core.reasons import Reason
from otel_mcp_health.core.vocabulary import AuthError, Era, TransportOutcome
from otel_mcp_health.processor import _memo

_TEXT = st.text(max_size=12)
_NAMES = st.lists(_TEXT, max_size=3).map(tuple)
_FLOATS = st.floats(allow_nan=False, allow_infinity=False)
_OPT_BOOL = st.none() | st.booleans()
_STATUS = st.none() | st.integers(100, 599)
_CODE = st.integers(-33000, 33000)


@st.composite
def _exchange(draw: st.DrawFn) -> dict[str, Any]:
    """Transport and authorization of one exchange: they share the HTTP status."""
    status = draw(_STATUS)
    transport = draw(
        st.none()
        | st.builds(
            TransportEvidence,
            outcome=st.sampled_from(TransportOutcome),
            http_status=st.just(status),
            request_written=_OPT_BOOL,
        )
    )
    error = draw(st.none() | st.sampled_from(AuthError))
    authorization: Any = draw(st.sampled_from(["n/a", "evidence"]))
    if authorization == "n/a":
        authorization = NOT_APPLICABLE
    elif status is None and error is None:
        authorization = None  # nothing observed on the network
    else:
        authorization = AuthorizationEvidence(http_status=status, error=error, scope=draw(_NAMES))
    return {"transport": transport, "authorization": authorization}


@st.composite
def calls(draw: st.DrawFn) -> CallEvidence:
    exchange = draw(_exchange())
    execution = draw(
        st.none()
        | st.builds(
            ExecutionEvidence,
            is_error=_OPT_BOOL,
            timed_out=st.booleans(),
            output_schema_valid=_OPT_BOOL,
        ).filter(
            lambda e: e.is_error is not None or e.timed_out or e.output_schema_valid is not None
        )
    )
    protocol = draw(
        st.none()
        | st.builds(ProtocolEvidence, error_code=st.none() | _CODE, result_valid=_OPT_BOOL)
    )
    has_result = execution is not None and execution.is_error is not None
    if protocol is None and has_result:
        protocol = ProtocolEvidence()  # an envelope arrived: the protocol layer was observed
    if protocol == ProtocolEvidence() and not has_result:
        protocol = None
    return CallEvidence(
        tool=draw(st.none() | _TEXT),
        read_only=draw(_OPT_BOOL),
        protocol=protocol,
        execution=execution,
        effect=draw(
            st.none() | st.builds(EffectEvidence, observed=st.booleans(), method=_TEXT.filter(bool))
        ),
        outcome=draw(
            st.none()
            | st.builds(
                OutcomeEvidence, method=_TEXT, passed=_OPT_BOOL, confidence=st.none() | _FLOATS
            )
        ),
        missing=draw(_NAMES),
        **exchange,
    )


_CHECKS = st.builds(
    ToolCallCheck,
    name=_TEXT,
    contract=st.sampled_from([Reason.UNKNOWN_TOOL_CALLED, Reason.MISSING_REQUIRED_ARGUMENT]),
    missing=_NAMES,
)
_CAPABILITIES = (
    st.none() | st.just({}) | st.builds(lambda c: {"tools": {"listChanged": c}}, st.booleans())
)


@st.composite
def handshakes(draw: st.DrawFn) -> HandshakeEvidence:
    return HandshakeEvidence(
        requested_version=draw(st.none() | _TEXT),
        negotiated_version=draw(st.none() | _TEXT),
        error_code=draw(st.none() | _CODE),
        capabilities=draw(_CAPABILITIES),
        supported_versions=draw(st.none() | _NAMES),
        **draw(_exchange()),
    )


_PAGES = st.builds(
    lambda cursor, next_cursor, failure: Page(
        cursor=cursor,
        next_cursor=next_cursor,
        failed=failure != "ok",
        error_code=failure if isinstance(failure, int) else None,
    ),
    st.none() | _TEXT,
    st.none() | _TEXT,
    st.just("ok") | st.just("failed") | _CODE,
)
_EVENTS = st.lists(
    st.builds(
        ProgressEvent,
        at=st.integers(0, 2**62),
        token=st.sampled_from([_codec.REQUEST_TOKEN, "other"]),
        progress=_FLOATS,
        total=st.none() | _FLOATS,
    ),
    max_size=3,
).map(tuple)
_PROGRESS = st.builds(
    lambda completed, **kw: ProgressEvidence(
        completed_at=completed,
        in_flight=completed is None,
        request_token=_codec.REQUEST_TOKEN,
        **kw,
    ),
    completed=st.none() | st.integers(0, 2**62),
    now=st.none() | st.integers(0, 2**62),
    started_at=st.none() | st.integers(0, 2**62),
    idle_window_seconds=st.none() | _FLOATS,
    deadline_seconds=st.none() | _FLOATS,
    events=_EVENTS,
)


@given(calls())
def test_a_call_round_trips(call: CallEvidence) -> None:
    assert _codec.decode_call(_codec.encode_call(call)) == call


@st.composite
def requests(draw: st.DrawFn) -> RequestEvidence:
    """A request as it ended: a write without a transport outcome only when there is none."""
    call = draw(calls())
    return RequestEvidence(
        call=call,
        request_id=draw(st.none() | _TEXT),
        request_written=draw(_OPT_BOOL) if call.transport is None else None,
        cancelled=draw(st.booleans()),
        error_type=draw(st.none() | _TEXT),
    )


@given(requests())
def test_a_request_round_trips(request: RequestEvidence) -> None:
    assert decode_request(_codec.encode_request(request)) == request


@given(_CHECKS)
def test_a_contract_finding_round_trips(check: ToolCallCheck) -> None:
    assert _codec.decode_tool_call_check(_codec.encode_tool_call_check(check)) == check


@given(
    st.none() | _TEXT,
    st.none() | _TEXT,
    st.sampled_from(["catalog", "client", "page"]),
)
def test_a_digest_round_trips(digest: str | None, error: str | None, of: Any) -> None:
    attrs = _codec.encode_digest(digest, error, of=of)
    assert _codec.decode_digest(attrs, of=of) == (digest, error)


@given(
    st.builds(
        InstallCheck,
        installed=st.integers(0, 10_000),
        discovered=st.integers(0, 10_000),
        changed=_NAMES,
        unlisted=_NAMES,
        discovery_digest=st.none() | _TEXT,
    )
)
def test_an_install_comparison_round_trips(check: InstallCheck) -> None:
    assert _codec.decode_install_check(_codec.encode_install_check(check)) == check


@given(
    st.builds(
        InstallCheck,
        installed=st.integers(0, 10_000),
        discovered=st.integers(0, 10_000),
        changed=_NAMES,
        unlisted=_NAMES,
        discovery_digest=st.none() | _TEXT,
        changed_members=_NAMES,
        earlier_catalog=st.booleans(),
    ),
    st.booleans(),
)
def test_an_offered_check_round_trips(check: InstallCheck, tied: bool) -> None:
    attrs = _codec.encode_offered("openai.chat/3", tied=tied, check=check)
    assert _codec.decode_offered(attrs) == check
    assert (attrs[A.AGENT_LABEL], attrs[A.AGENT_TIED]) == ("openai.chat/3", tied)


def test_a_call_without_an_agent_decodes_no_offered_check() -> None:
    assert _codec.decode_offered(_codec.encode_digest("sha256:x", None, of="client")) is None


def test_an_install_compared_with_nothing_decodes_as_none() -> None:
    assert _codec.decode_install_check(_codec.encode_digest("sha256:x", None, of="client")) is None


def test_a_passed_contract_check_decodes_as_no_finding() -> None:
    assert _codec.decode_tool_call_check(_codec.encode_contract(None)) is None


@given(handshakes())
def test_a_handshake_round_trips(handshake: HandshakeEvidence) -> None:
    attrs = _codec.encode_handshake(handshake)
    assert _codec.decode_handshake(attrs, handshake.supported_versions) == handshake


@given(_PAGES)
def test_a_page_round_trips(page: Page) -> None:
    assert _codec.decode_page(_codec.encode_page(page)) == page


@given(_PROGRESS)
def test_progress_round_trips(progress: ProgressEvidence) -> None:
    attrs = _codec.encode_clocks(progress.idle_window_seconds, progress.deadline_seconds)
    events = [_codec.encode_progress_event(event) for event in progress.events]
    decoded = _codec.decode_progress(
        attrs,
        [Event(name, event_attrs, timestamp=at) for name, event_attrs, at in events],
        started_at=progress.started_at,
        now=progress.now,
        completed_at=progress.completed_at,
    )
    assert decoded == progress


_CONNECTIONS = st.builds(
    _codec.Connection,
    protocol_version=st.none() | _TEXT,
    network_transport=st.none() | st.sampled_from(["tcp", "pipe"]),
    server_address=st.none() | _TEXT,
    server_port=st.none() | st.integers(0, 65535),
)


@given(_CONNECTIONS)
def test_a_connection_round_trips(connection: _codec.Connection) -> None:
    assert _codec.decode_connection(_codec.encode_connection(connection)) == connection


@given(st.sampled_from([A.ORIGIN_APPLICATION, A.ORIGIN_INTERNAL]))
def test_an_origin_round_trips(origin: str) -> None:
    assert _codec.decode_origin(_codec.encode_origin(origin)) == origin


@given(st.sampled_from(Era))
def test_an_era_is_written_as_its_vocabulary_value(era: Era) -> None:
    assert Era(_codec.encode_era(era)[A.SESSION_ERA]) is era


@given(st.integers(0, 2**31))
def test_a_page_index_round_trips(index: int) -> None:
    assert _codec.decode_page_index(_codec.encode_page_index(index)) == index


@given(st.booleans())
def test_waiting_for_user_round_trips(waiting: bool) -> None:
    assert _codec.decode_waiting_for_user(_codec.encode_waiting_for_user(waiting)) is waiting


def test_the_in_flight_flags_round_trip_and_default_to_unset() -> None:
    assert _codec.decode_pending(_codec.encode_pending()) is True
    assert _codec.decode_cancelled(_codec.encode_cancelled()) is True
    assert _codec.decode_pending({}) is False
    assert _codec.decode_cancelled({}) is False
    assert _codec.decode_waiting_for_user({}) is False
    assert _codec.decode_page_index({}) is None


# ----------------------------------------------------------------------------------------------
# Whatever decoding produces from any attributes survives a round trip
# ----------------------------------------------------------------------------------------------
_VALUES = st.one_of(
    st.booleans(),
    st.integers(-2, 600),
    _FLOATS,
    st.sampled_from(["ok", "pipe", "tcp", "passed", "failed", "invalid_token", "-32602", "a b"]),
    st.sampled_from([era.value for era in Era]),
    st.sampled_from([A.CONTRACT_UNKNOWN_TOOL, A.CONTRACT_MISSING_REQUIRED_ARGUMENT, A.CONTRACT_OK]),
    st.lists(st.sampled_from(["x", "y"]), max_size=2).map(tuple),
)
_HANDSHAKE_KEYS = (
    A.SESSION_REQUESTED_VERSION,
    A.MCP_PROTOCOL_VERSION,
    A.SESSION_CAPABILITY_TOOLS,
    A.SESSION_CAPABILITY_TOOLS_LIST_CHANGED,
    A.SESSION_ERA,
    A.CATALOG_PAGE_INDEX,
    A.OUTCOME_PENDING,
    A.CALL_WAITING_FOR_USER,
    A.CALL_CANCELLED,
    A.SERVER_ADDRESS,
    A.SERVER_PORT,
    A.EVIDENCE_ORIGIN,
)
#: Any values, of any type, except that a JSON-RPC code is always written as a readable integer
#: (an unreadable one decodes as "protocol not observed", which no record can say next to a result).
_ANY_ATTRS = st.fixed_dictionaries(
    {},
    optional={
        **dict.fromkeys((*_memo.CALL_KEYS, *_HANDSHAKE_KEYS, A.ERROR_TYPE), _VALUES),
        A.RPC_RESPONSE_STATUS_CODE: _CODE.map(str) | _CODE,
    },
)


@given(_ANY_ATTRS)
def test_every_decoded_call_round_trips(attrs: dict[str, Any]) -> None:
    call = _codec.decode_call(attrs)
    assert _codec.decode_call(_codec.encode_call(call)) == call
    check = _codec.decode_tool_call_check(attrs)
    if check is not None:
        assert _codec.decode_tool_call_check(_codec.encode_tool_call_check(check)) == check


@given(_ANY_ATTRS)
def test_every_decoded_handshake_and_page_round_trips(attrs: dict[str, Any]) -> None:
    handshake = _codec.decode_handshake(attrs, None)
    assert _codec.decode_handshake(_codec.encode_handshake(handshake), None) == handshake
    page = _codec.decode_page(attrs)
    assert _codec.decode_page(_codec.encode_page(page)) == page


@given(_ANY_ATTRS)
def test_every_decoded_era_index_and_flag_round_trips(attrs: dict[str, Any]) -> None:
    index = _codec.decode_page_index(attrs)
    assert (
        _codec.decode_page_index(_codec.encode_page_index(index) if index is not None else {})
        == index
    )
    waiting = _codec.decode_waiting_for_user(attrs)
    assert _codec.decode_waiting_for_user(_codec.encode_waiting_for_user(waiting)) is waiting
    for encode, decode in (
        (_codec.encode_pending, _codec.decode_pending),
        (_codec.encode_cancelled, _codec.decode_cancelled),
    ):
        flag = decode(attrs)
        assert decode(encode() if flag else {}) is flag
    connection = _codec.decode_connection(attrs)
    assert _codec.decode_connection(_codec.encode_connection(connection)) == connection
    origin = _codec.decode_origin(attrs)
    assert (
        _codec.decode_origin(_codec.encode_origin(origin) if origin is not None else {}) == origin
    )
