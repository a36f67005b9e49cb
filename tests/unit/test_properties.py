"""Property tests of the classifiers' invariants (hypothesis).

* Totality and determinism: every well-formed record gets exactly one verdict, the same each time.
* Missing evidence is never green: removing any piece of positive evidence from a ``healthy`` or
  ``converged`` record never leaves it green.
* Precedence: ``needs_auth`` beats a stale catalog, a failed handshake is never
  ``stale_catalog``, a stale catalog beats every request-level state.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_mcp_health.core.calls import classify_call
from otel_mcp_health.core.catalog import classify_catalog
from otel_mcp_health.core.evidence import (
    NOT_APPLICABLE,
    AuthorizationEvidence,
    CallEvidence,
    CatalogEvidence,
    Discovery,
    EffectEvidence,
    ExecutionEvidence,
    HandshakeEvidence,
    OutcomeEvidence,
    Page,
    ProgressEvent,
    ProgressEvidence,
    ProtocolEvidence,
    RefreshPolicy,
    SessionEvidence,
    ToolCallCheck,
    TransportEvidence,
)
from otel_mcp_health.core.session import classify_session
from otel_mcp_health.core.vocabulary import (
    AuthError,
    CatalogVerdict,
    FirstFailedLayer,
    TransportOutcome,
    Verdict,
)

S = 1_000_000_000
T0 = 1_800_000_000 * S
times = st.integers(min_value=T0, max_value=T0 + 1000 * S)
maybe = st.none() | st.booleans()
codes = st.sampled_from([-32700, -32600, -32601, -32602, -32603, -32021, -32022, -32001])
statuses = st.sampled_from([200, 202, 401, 403, 404, 500, 503])

transports = st.builds(
    TransportEvidence,
    outcome=st.sampled_from(list(TransportOutcome)),
    http_status=st.none() | statuses,
    request_written=maybe,
)
authorizations = (
    st.none()
    | st.just(NOT_APPLICABLE)
    | st.builds(
        AuthorizationEvidence,
        http_status=st.none() | statuses,
        error=st.none() | st.sampled_from(list(AuthError)),
        scope=st.lists(st.sampled_from(["a", "b:write"]), max_size=2).map(tuple),
    )
)
protocols = st.none() | st.builds(
    ProtocolEvidence, error_code=st.none() | codes, result_valid=maybe
)
executions = st.none() | st.builds(
    ExecutionEvidence, is_error=maybe, timed_out=st.booleans(), output_schema_valid=maybe
)
effects = st.none() | st.builds(
    EffectEvidence,
    observed=st.booleans(),
    method=st.sampled_from(["destination_query", "idempotency_key"]),
)
outcomes = st.none() | st.builds(
    OutcomeEvidence,
    method=st.sampled_from(["file_digest", "not_required", "http_status"]),
    passed=maybe,
    confidence=st.none() | st.floats(0, 1),
)
calls = st.builds(
    CallEvidence,
    tool=st.none() | st.just("t"),
    read_only=maybe,
    transport=st.none() | transports,
    authorization=authorizations,
    protocol=protocols,
    execution=executions,
    effect=effects,
    outcome=outcomes,
)

tool = st.sampled_from(
    [
        {"name": "a", "inputSchema": {"type": "object", "required": ["x"]}},
        {"name": "b", "inputSchema": {"type": "object"}},
        {"name": "a", "inputSchema": {"type": "object", "required": ["x", "y"]}},
    ]
)
cursors = st.none() | st.sampled_from(["c1", "c2", "c3"])
pages = st.builds(
    Page,
    cursor=cursors,
    next_cursor=cursors,
    tools=st.none() | st.lists(tool, max_size=3).map(tuple),
    failed=st.booleans(),
)
discoveries = st.builds(
    Discovery,
    started_at=st.none() | times,
    completed_at=st.none() | times,
    pages=st.lists(pages, max_size=3).map(tuple),
)
catalogs = st.builds(
    CatalogEvidence,
    list_changed=maybe,
    refresh_policy=st.none() | st.builds(RefreshPolicy, max_age_seconds=st.floats(0, 500)),
    now=st.none() | times,
    notifications=st.lists(times, max_size=2).map(tuple),
    discoveries=st.lists(discoveries, max_size=3).map(tuple),
    client_tools=st.none() | st.lists(tool, max_size=3).map(tuple),
    tool_calls=st.lists(
        st.builds(
            ToolCallCheck,
            name=st.sampled_from(["a", "b", "z"]),
            argument_names=st.none() | st.just(("x",)),
        ),
        max_size=2,
    ).map(tuple),
)
handshakes = st.none() | st.builds(
    HandshakeEvidence,
    requested_version=st.just("2025-11-25"),
    negotiated_version=st.none() | st.sampled_from(["2025-11-25", "2026-07-28", "1999-01-01"]),
    error_code=st.none() | codes,
    capabilities=st.none() | st.sampled_from([{}, {"tools": {}}, {"tools": {"listChanged": True}}]),
    transport=st.none() | transports,
    authorization=authorizations,
)
progresses = st.none() | st.builds(
    ProgressEvidence,
    now=st.none() | times,
    started_at=st.none() | st.just(T0),
    completed_at=st.none() | times,
    in_flight=st.booleans(),
    idle_window_seconds=st.none() | st.floats(1, 100),
    deadline_seconds=st.none() | st.floats(1, 900),
    request_token=st.none() | st.just("7"),
    events=st.lists(
        st.builds(
            ProgressEvent, at=times, token=st.sampled_from(["7", "8"]), progress=st.floats(0, 10)
        ),
        max_size=4,
    ).map(tuple),
)
sessions = st.builds(
    SessionEvidence,
    handshake=handshakes,
    catalog=st.none() | catalogs,
    catalog_verdict=st.none() | st.sampled_from(list(CatalogVerdict)),
    call=st.none() | calls,
    progress=progresses,
)


@settings(max_examples=300)
@given(calls)
def test_call_classifier_is_total_and_deterministic(call: CallEvidence) -> None:
    first, second = classify_call(call), classify_call(call)
    assert first == second
    assert first.verdict in set(Verdict)


@settings(max_examples=300)
@given(catalogs)
def test_catalog_classifier_is_total_and_deterministic(catalog: CatalogEvidence) -> None:
    first, second = classify_catalog(catalog), classify_catalog(catalog)
    assert first == second
    assert first.verdict in set(CatalogVerdict)


@settings(max_examples=300)
@given(sessions)
def test_session_classifier_is_total_and_deterministic(session: SessionEvidence) -> None:
    first, second = classify_session(session), classify_session(session)
    assert first == second
    assert first.call.verdict in set(Verdict)


# ---- missing evidence is never green ---------------------------------------------------------
HEALTHY_CALL = CallEvidence(
    tool="t",
    read_only=False,
    transport=TransportEvidence(outcome=TransportOutcome.OK, http_status=200, request_written=True),
    authorization=AuthorizationEvidence(http_status=200),
    protocol=ProtocolEvidence(error_code=None),
    execution=ExecutionEvidence(is_error=False),
    outcome=OutcomeEvidence(method="file_digest", passed=True),
)
HEALTHY_SESSION = SessionEvidence(
    handshake=HandshakeEvidence(
        negotiated_version="2025-11-25", capabilities={"tools": {"listChanged": True}}
    ),
    catalog_verdict=CatalogVerdict.CONVERGED,
    call=HEALTHY_CALL,
)
TOOLS = ({"name": "a", "inputSchema": {"type": "object"}},)
CONVERGED_CATALOG = CatalogEvidence(
    list_changed=True,
    now=T0 + 10 * S,
    discoveries=(
        Discovery(
            started_at=T0,
            completed_at=T0 + S,
            pages=(Page(cursor=None, next_cursor=None, tools=TOOLS),),
        ),
    ),
)


def _removals(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """Every variant of ``value`` with one piece of positive evidence removed (set to None)."""
    variants: list[tuple[str, Any]] = []
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return variants
    for f in dataclasses.fields(value):
        current = getattr(value, f.name)
        if current is None or current is NOT_APPLICABLE:
            continue
        where = f"{path}.{f.name}"
        # bool is an int: flags such as list_changed are removed too.
        if dataclasses.is_dataclass(current) or isinstance(current, str | int | dict):
            variants.append((where, dataclasses.replace(value, **{f.name: None})))
        for sub_path, sub in _removals(current, where):
            variants.append((sub_path, dataclasses.replace(value, **{f.name: sub})))
    return variants


POSITIVE_CALL_FIELDS = {
    ".transport",
    ".authorization",
    ".protocol",
    ".execution",
    ".outcome",
    ".authorization.http_status",
    ".execution.is_error",
}


def test_removing_positive_evidence_from_a_healthy_call_is_never_green() -> None:
    assert classify_call(HEALTHY_CALL).verdict is Verdict.HEALTHY
    removed = dict(_removals(HEALTHY_CALL))
    assert set(removed) >= POSITIVE_CALL_FIELDS
    for where in POSITIVE_CALL_FIELDS:
        assert classify_call(removed[where]).verdict is not Verdict.HEALTHY, where


def test_removing_positive_evidence_from_a_healthy_session_is_never_green() -> None:
    assert classify_session(HEALTHY_SESSION).call.verdict is Verdict.HEALTHY
    removed = dict(_removals(HEALTHY_SESSION))
    expected = {
        ".handshake",
        ".catalog_verdict",
        ".call",
        ".handshake.negotiated_version",
        ".handshake.capabilities",
    } | {f".call{f}" for f in POSITIVE_CALL_FIELDS}
    assert expected <= set(removed)
    for where in expected:
        assert classify_session(removed[where]).call.verdict is not Verdict.HEALTHY, where


def test_removing_positive_evidence_from_a_converged_catalog_is_never_green() -> None:
    assert classify_catalog(CONVERGED_CATALOG).verdict is CatalogVerdict.CONVERGED
    variants = dict(_removals(CONVERGED_CATALOG))
    variants[".discoveries"] = dataclasses.replace(CONVERGED_CATALOG, discoveries=())
    d = CONVERGED_CATALOG.discoveries[0]
    variants[".discoveries[0].pages"] = dataclasses.replace(
        CONVERGED_CATALOG, discoveries=(dataclasses.replace(d, pages=()),)
    )
    variants[".discoveries[0].pages[0].tools"] = dataclasses.replace(
        CONVERGED_CATALOG,
        discoveries=(dataclasses.replace(d, pages=(dataclasses.replace(d.pages[0], tools=None),)),),
    )
    variants[".discoveries[0].completed_at"] = dataclasses.replace(
        CONVERGED_CATALOG, discoveries=(dataclasses.replace(d, completed_at=None),)
    )
    variants[".discoveries[0].started_at+signal"] = dataclasses.replace(
        CONVERGED_CATALOG,
        notifications=(T0 - S,),
        discoveries=(dataclasses.replace(d, started_at=None),),
    )
    for where, variant in variants.items():
        if where == ".now":
            continue  # a signalling server's freshness does not depend on the clock
        assert classify_catalog(variant).verdict is not CatalogVerdict.CONVERGED, where


@settings(max_examples=300)
@given(sessions)
def test_a_green_session_always_has_its_positive_evidence(session: SessionEvidence) -> None:
    result = classify_session(session)
    if result.call.verdict is not Verdict.HEALTHY:
        return
    call, handshake = session.call, session.handshake
    assert call is not None
    assert handshake is not None
    assert handshake.negotiated_version is not None
    assert handshake.capabilities is not None
    assert call.outcome is not None
    assert result.catalog_verdict is CatalogVerdict.CONVERGED


# ---- precedence --------------------------------------------------------------------------------
@settings(max_examples=300)
@given(sessions)
def test_precedence(session: SessionEvidence) -> None:
    result = classify_session(session)
    call_layers = classify_call(session.call) if session.call is not None else None
    handshake_failed = result.call.rule == "handshake_failed"
    if handshake_failed:
        assert result.call.verdict is not Verdict.STALE_CATALOG
        return
    if (
        call_layers is not None
        and call_layers.first_failed_layer is FirstFailedLayer.AUTHORIZATION
        and session.progress is None
    ):
        assert result.call.verdict is Verdict.NEEDS_AUTH
    if (
        result.call.verdict
        in {
            Verdict.EFFECT_UNKNOWN,
            Verdict.TRANSPORT_ERROR,
            Verdict.PROTOCOL_ERROR,
            Verdict.TOOL_FAILED,
            Verdict.WORKING,
            Verdict.FALSE_SUCCESS,
            Verdict.HEALTHY,
            Verdict.UNVERIFIED,
        }
        and result.catalog_verdict is not CatalogVerdict.CONVERGED
    ):
        # the one exception (docs/model.md#precedence): a catalog unverifiable only for want
        # of any discovery never hides the call's own failed layer, and is never green
        assert result.catalog is not None
        assert result.catalog.verdict is CatalogVerdict.UNVERIFIABLE
        assert result.catalog.reason == "no_discovery"
        assert result.call.first_failed_layer is not FirstFailedLayer.NONE
        assert result.call.verdict not in {Verdict.HEALTHY, Verdict.UNVERIFIED, Verdict.WORKING}
