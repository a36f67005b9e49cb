"""One server identity partitions spans exactly as the string keys it replaced.

A server used to be named by separator-joined strings: the catalog key (target key, name and
version joined by NUL) that the sessions of one server share a catalog by, and the incident key
(``target\\x00<target key>`` or ``label\\x00<address:port | address | name>``) with its exported
label. Those string keys are kept below, verbatim, as the reference: every case of the table and
every generated stream of spans must fall into the same classes under
:class:`~otel_mcp_health.core.server.ServerIdentity` as under them, and what is exported from the
identity (metric labels, the incident key's material) must be the very same values.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.server import (
    CatalogKey,
    IncidentScope,
    ScopeKind,
    ServerIdentity,
    ServerLabel,
)

# ----------------------------------------------------------------------------------------------
# The reference: today's string keys, as they were written
# ----------------------------------------------------------------------------------------------
_CATALOG = (A.SERVER_TARGET_KEY, A.SERVER_NAME, A.SERVER_VERSION)
_LABELS = (A.SERVER_ADDRESS, A.SERVER_PORT, A.SERVER_NAME)


def _str(attrs: dict[str, Any], key: str) -> str | None:
    value = attrs.get(key)
    return value if isinstance(value, str) else None


def old_catalog_key(attrs: dict[str, Any]) -> str | None:
    """``_codec.decode_server_key`` as it was."""
    parts = [_str(attrs, name) for name in _CATALOG]
    if parts == [None, None, None]:
        return None
    return "\x00".join(part or "" for part in parts)


OldServer = tuple[str, tuple[tuple[str, Any], ...]]


def old_server(attrs: dict[str, Any], known: OldServer | None) -> OldServer | None:
    """``processor._spans.server_identity`` as it was: ``(key, labels)``."""
    found: dict[str, Any] = dict(known[1]) if known is not None else {}
    connection = _codec.decode_connection(attrs)  # the span readers are unchanged
    address, port = connection.server_address, connection.server_port
    if address is not None:
        found[A.SERVER_ADDRESS] = cap(address)
    if port is not None:
        found[A.SERVER_PORT] = port
    name = _str(attrs, A.SERVER_NAME)
    if name is not None:
        found[A.SERVER_NAME] = cap(name)
    target = _str(attrs, A.SERVER_TARGET_KEY)
    if target is not None:
        key = "target\x00" + target
    elif known is not None and known[0].startswith("target\x00"):
        key = known[0]
    elif A.SERVER_ADDRESS in found:
        found_port = found.get(A.SERVER_PORT)
        found_address = found[A.SERVER_ADDRESS]
        key = "label\x00" + (
            f"{found_address}:{found_port}" if found_port is not None else found_address
        )
    elif A.SERVER_NAME in found:
        key = "label\x00" + found[A.SERVER_NAME]
    else:
        return known
    return key, tuple((k, found[k]) for k in _LABELS if k in found)


def old_incident_server(server: OldServer | None) -> str:
    return server[0] if server is not None else "unknown"


def old_label_attributes(server: OldServer | None) -> dict[str, Any]:
    labels = server[1] if server is not None else ()
    return dict(labels) if labels else {A.SERVER_NAME: "unknown"}


def new_server(spans: list[dict[str, Any]]) -> ServerIdentity:
    server = ServerIdentity()
    for attrs in spans:
        server = _codec.decode_server(attrs, server)
    return server


def old_server_of(spans: list[dict[str, Any]]) -> OldServer | None:
    server: OldServer | None = None
    for attrs in spans:
        server = old_server(attrs, server)
    return server


# ----------------------------------------------------------------------------------------------
# The table: (spans of one session -> old key), one row per rule the old keys encoded
# ----------------------------------------------------------------------------------------------
_HOST = {A.SERVER_ADDRESS: "gw.example.test", A.SERVER_PORT: 443}
INCIDENT_TABLE: list[tuple[str, list[dict[str, Any]], str, dict[str, Any]]] = [
    ("no span names the server", [{}], "unknown", {A.SERVER_NAME: "unknown"}),
    ("a port alone names no server", [{A.SERVER_PORT: 8}], "unknown", {A.SERVER_NAME: "unknown"}),
    (
        "the target key wins over the label",
        [{**_HOST, A.SERVER_TARGET_KEY: "k1"}],
        "target\x00k1",
        _HOST,
    ),
    (
        "the target key stays once learned",
        [{A.SERVER_TARGET_KEY: "k1"}, {A.SERVER_ADDRESS: "other", A.SERVER_NAME: "n"}],
        "target\x00k1",
        {A.SERVER_ADDRESS: "other", A.SERVER_NAME: "n"},
    ),
    (
        "a later target key replaces the earlier one",
        [{A.SERVER_TARGET_KEY: "k1"}, {A.SERVER_TARGET_KEY: "k2"}],
        "target\x00k2",
        {A.SERVER_NAME: "unknown"},
    ),
    (
        "an empty target key is a target key",
        [{A.SERVER_TARGET_KEY: "", A.SERVER_NAME: "n"}],
        "target\x00",
        {A.SERVER_NAME: "n"},
    ),
    ("label fallback: address and port", [_HOST], "label\x00gw.example.test:443", _HOST),
    (
        "label fallback: address without a port",
        [{A.SERVER_ADDRESS: "h", A.SERVER_NAME: "n"}],
        "label\x00h",
        {A.SERVER_ADDRESS: "h", A.SERVER_NAME: "n"},
    ),
    (
        "label fallback: the name",
        [{A.SERVER_NAME: "n", A.SERVER_PORT: 1}],
        "label\x00n",
        {A.SERVER_PORT: 1, A.SERVER_NAME: "n"},
    ),
    (
        "a port seen before any name is dropped with the span that named nothing",
        [{A.SERVER_PORT: 1}, {A.SERVER_NAME: "n"}],
        "label\x00n",
        {A.SERVER_NAME: "n"},
    ),
    (
        "labels accumulate over the session's spans",
        [{A.SERVER_ADDRESS: "h"}, {A.SERVER_PORT: 2}, {A.SERVER_NAME: "n"}],
        "label\x00h:2",
        {A.SERVER_ADDRESS: "h", A.SERVER_PORT: 2, A.SERVER_NAME: "n"},
    ),
    (
        "a port may be written as a string",
        [{A.SERVER_ADDRESS: "h", A.SERVER_PORT: "8"}],
        "label\x00h:8",
        {A.SERVER_ADDRESS: "h", A.SERVER_PORT: 8},
    ),
    (
        "a boolean port is no port",
        [{A.SERVER_ADDRESS: "h", A.SERVER_PORT: True}],
        "label\x00h",
        {A.SERVER_ADDRESS: "h"},
    ),
    (
        "long names are capped as exported",
        [{A.SERVER_NAME: "x" * 300}],
        "label\x00" + cap("x" * 300),
        {A.SERVER_NAME: cap("x" * 300)},
    ),
]


@pytest.mark.parametrize(
    ("spans", "incident", "labels"),
    [row[1:] for row in INCIDENT_TABLE],
    ids=[row[0] for row in INCIDENT_TABLE],
)
def test_each_rule_of_the_old_incident_key_holds(
    spans: list[dict[str, Any]], incident: str, labels: dict[str, Any]
) -> None:
    old = old_server_of(spans)
    assert (old_incident_server(old), old_label_attributes(old)) == (incident, labels)
    new = new_server(spans)
    assert _codec.scope_material(new.scope) == incident
    assert list(_codec.label_attributes(new.label).items()) == list(labels.items())


def test_two_gateway_paths_on_one_host_and_port_never_share_an_incident() -> None:
    github = new_server([{**_HOST, A.SERVER_TARGET_KEY: "github"}])
    jira = new_server([{**_HOST, A.SERVER_TARGET_KEY: "jira"}])
    assert github.label == jira.label
    assert github.scope != jira.scope
    assert github.scope == IncidentScope(ScopeKind.TARGET, "github")


CATALOG_TABLE: list[tuple[str, dict[str, Any], str | None]] = [
    ("nothing named", {A.SERVER_ADDRESS: "h"}, None),
    (
        "all three",
        {A.SERVER_TARGET_KEY: "k", A.SERVER_NAME: "n", A.SERVER_VERSION: "1"},
        "k\0n\x001",
    ),
    ("target only", {A.SERVER_TARGET_KEY: "k"}, "k\x00\x00"),
    ("name only", {A.SERVER_NAME: "n"}, "\x00n\x00"),
    ("empty parts name a server", {A.SERVER_VERSION: ""}, "\x00\x00"),
    ("a non-string part is absent", {A.SERVER_NAME: 3, A.SERVER_VERSION: "1"}, "\x00\x001"),
]


@pytest.mark.parametrize(
    ("attrs", "key"), [row[1:] for row in CATALOG_TABLE], ids=[row[0] for row in CATALOG_TABLE]
)
def test_each_rule_of_the_old_catalog_key_holds(attrs: dict[str, Any], key: str | None) -> None:
    assert old_catalog_key(attrs) == key
    new = _codec.decode_catalog_key(attrs)
    assert (new is None) == (key is None)
    if new is not None:  # encoding it back writes exactly the attributes read
        assert _codec.encode_catalog_key(new) == {
            k: v for k, v in attrs.items() if k in _CATALOG and isinstance(v, str)
        }


def test_a_part_named_empty_equals_a_part_not_named() -> None:
    assert CatalogKey("k", None, None) == CatalogKey("k", "", "")
    assert hash(CatalogKey("k", None, None)) == hash(CatalogKey("k", "", ""))
    assert CatalogKey("k", "n", None) != CatalogKey("k", None, "n")
    assert _codec.encode_catalog_key(CatalogKey("k", None, "")) == {
        A.SERVER_TARGET_KEY: "k",
        A.SERVER_VERSION: "",
    }


def test_the_instrumentation_and_the_processor_build_one_catalog_key() -> None:
    """What the instrumentation writes on a handshake span, the processor reads back equal."""
    key = CatalogKey("k", "n", None)
    assert _codec.decode_catalog_key(_codec.encode_catalog_key(key)) == key
    assert _codec.encode_catalog_key(None) == {}


# ----------------------------------------------------------------------------------------------
# Generated streams: the same classes, the same exported values
# ----------------------------------------------------------------------------------------------
_TEXT = st.sampled_from(["", "a", "b", "a:1", "x" * 300])
_PORT = st.one_of(st.sampled_from([1, 443, 0]), st.booleans(), st.just("1"))
_SPAN = st.fixed_dictionaries(
    {},
    optional={
        A.SERVER_TARGET_KEY: _TEXT,
        A.SERVER_ADDRESS: _TEXT,
        A.SERVER_PORT: _PORT,
        A.SERVER_NAME: _TEXT,
        A.SERVER_VERSION: _TEXT,
        A.MCP_METHOD_NAME: st.just("tools/call"),
    },
)
_SESSIONS = st.lists(st.lists(_SPAN, max_size=4), min_size=1, max_size=6)


@settings(max_examples=400)
@given(_SESSIONS)
def test_sessions_share_an_incident_exactly_when_their_old_keys_did(
    sessions: list[list[dict[str, Any]]],
) -> None:
    old = [old_server_of(spans) for spans in sessions]
    new = [new_server(spans) for spans in sessions]
    for before, after in zip(old, new, strict=True):
        assert _codec.scope_material(after.scope) == old_incident_server(before)
        assert list(_codec.label_attributes(after.label).items()) == list(
            old_label_attributes(before).items()
        )
    for i, first in enumerate(old):
        for j, second in enumerate(old):
            same_old = old_incident_server(first) == old_incident_server(second)
            assert same_old == (new[i].scope == new[j].scope)
            same_label = old_label_attributes(first) == old_label_attributes(second)
            assert same_label == (new[i].label == new[j].label)


@settings(max_examples=400)
@given(st.lists(_SPAN, min_size=1, max_size=8))
def test_spans_share_a_catalog_exactly_when_their_old_keys_did(
    spans: list[dict[str, Any]],
) -> None:
    old = [old_catalog_key(attrs) for attrs in spans]
    new = [_codec.decode_catalog_key(attrs) for attrs in spans]
    assert [key is None for key in old] == [key is None for key in new]
    for i, first in enumerate(old):
        for j, second in enumerate(old):
            assert (first == second) == (new[i] == new[j])
            if first == second:
                assert hash(new[i]) == hash(new[j])


def test_the_label_is_what_pins_match_and_metrics_export() -> None:
    label = ServerLabel("github", "api.github.com", 443)
    assert _codec.label_attributes(label) == {
        A.SERVER_ADDRESS: "api.github.com",
        A.SERVER_PORT: 443,
        A.SERVER_NAME: "github",
    }
    assert not ServerLabel().known
    assert ServerIdentity(catalog=CatalogKey("k", None, None)).scope is None
