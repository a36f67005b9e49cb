"""Member digests and pins (docs/evidence-format.md#member-digests, #pin-file): golden vectors
recomputed with the ``rfc8785`` package, differential tests, globs, and the pin file's parser and
renderer (hostile names round-trip; every malformed file raises PinsError and nothing else)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from otel_mcp_health.core import pin_codec
from otel_mcp_health.core.digest import (
    PROJECTED_MEMBERS,
    DigestError,
    tool_digests,
)
from otel_mcp_health.core.pins import (
    ABSENT,
    PINS_FORMAT,
    PinFile,
    PinsError,
    ServerPins,
    ToolPin,
    member_digests,
    parse_pins,
    pin_server,
    render_pins,
    tool_digest,
)
from otel_mcp_health.core.reasons import DigestReason
from otel_mcp_health.core.server import ServerLabel

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
MEMBER_VECTORS = sorted((VECTORS / "members").glob("*.json"))
PIN_FILE = VECTORS / "pins" / "two_servers.toml"
BASE = json.loads((VECTORS / "digest" / "read_ticket_v1.json").read_text("utf-8"))["tools"]
DIGEST = "sha256:" + "ab" * 32


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _reference(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The recipe with the rfc8785 package and hashlib only (independent of our canonicalizer)."""
    members = {k: _sha(rfc8785.dumps(tool[k])) if k in tool else ABSENT for k in PROJECTED_MEMBERS}
    projected = {k: tool[k] for k in PROJECTED_MEMBERS if k in tool}
    return {"digest": _sha(rfc8785.dumps(projected)), "members": members}


# ---------------------------------------------------------------------------- member digests


def test_member_vectors_present() -> None:
    assert len(MEMBER_VECTORS) >= 8
    assert any("error" in json.loads(p.read_text("utf-8")) for p in MEMBER_VECTORS)


@pytest.mark.parametrize("path", MEMBER_VECTORS, ids=lambda p: p.stem)
def test_member_vector(path: Path) -> None:
    case = json.loads(path.read_text("utf-8"))
    if "error" in case:
        for tool in case["tools"]:
            with pytest.raises(DigestError) as info:
                member_digests(tool)
            assert info.value.reason == case["error"]
        return
    per_tool = tool_digests(case["tools"])
    for tool in case["tools"]:
        expected = case["expected"][tool["name"]]
        assert _reference(tool) == expected  # the stored file is the recipe's, not ours
        assert member_digests(tool) == expected["members"]
        assert tool_digest(tool) == expected["digest"] == per_tool[tool["name"]]


def test_meta_and_icons_change_no_member_digest() -> None:
    plain = json.loads((VECTORS / "members" / "read_ticket_v1.json").read_text("utf-8"))
    meta = json.loads((VECTORS / "members" / "read_ticket_v1_meta_icons.json").read_text("utf-8"))
    assert plain["expected"] == meta["expected"]


def test_a_new_required_argument_changes_only_input_schema() -> None:
    v1 = json.loads((VECTORS / "members" / "read_ticket_v1.json").read_text("utf-8"))
    v2 = json.loads(
        (VECTORS / "members" / "read_ticket_v2_new_required_argument.json").read_text("utf-8")
    )
    old, new = v1["expected"]["read_ticket"], v2["expected"]["read_ticket"]
    assert old["digest"] != new["digest"]
    assert [k for k in PROJECTED_MEMBERS if old["members"][k] != new["members"][k]] == [
        "inputSchema"
    ]


def test_null_member_differs_from_absent() -> None:
    assert member_digests({"name": "t", "title": None})["title"] == _sha(b"null")
    assert member_digests({"name": "t"})["title"] == ABSENT


@pytest.mark.parametrize(
    ("tool", "reason"),
    [
        (["name", "t"], DigestReason.TOOL_NOT_AN_OBJECT),
        ("t", DigestReason.TOOL_NOT_AN_OBJECT),
        ({"description": "no name"}, DigestReason.TOOL_WITHOUT_NAME),
        ({"name": 7}, DigestReason.TOOL_WITHOUT_NAME),
        ({"name": "t", "description": math.inf}, DigestReason.UNREPRESENTABLE),
        ({"name": "t", "inputSchema": {"a": 2**60}}, DigestReason.UNREPRESENTABLE),
        ({"name": "t", "title": "\ud800"}, DigestReason.UNREPRESENTABLE),
        ({"name": "t", "annotations": {1: True}}, DigestReason.UNREPRESENTABLE),
        ({"name": "t", "execution": object()}, DigestReason.UNREPRESENTABLE),
    ],
)
def test_member_digest_errors_are_digest_errors(tool: Any, reason: str) -> None:
    with pytest.raises(DigestError) as info:
        member_digests(tool)
    assert info.value.reason == reason
    with pytest.raises(DigestError):
        tool_digest(tool)


class _Hostile(Mapping[str, Any]):
    """A mapping whose every lookup fails (a hostile SDK object)."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("boom")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("boom")

    def __len__(self) -> int:
        return 1


def test_a_mapping_that_fails_is_a_digest_error() -> None:
    with pytest.raises(DigestError) as info:
        member_digests(_Hostile())
    assert info.value.reason == DigestReason.TOOL_NOT_AN_OBJECT


_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["\ud800", "\u2028", '"', "\\", "\x00", "😀", "é"]),
)
_JSON = st.recursive(
    _SCALAR,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
_TOOL = st.fixed_dictionaries(
    {"name": st.text(max_size=10)},
    optional=dict.fromkeys(PROJECTED_MEMBERS[1:], _JSON) | {"_meta": _JSON},
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(_TOOL)
@example({"name": "t", "inputSchema": {"x": -0.0, "y": 1e21, "z": 5e-324}})
def test_member_digests_match_rfc8785(tool: dict[str, Any]) -> None:
    """Differential: our member digests equal the rfc8785 recipe's, or both refuse the tool."""
    try:
        expected = _reference(tool)
    except (rfc8785.CanonicalizationError, ValueError, TypeError):
        with pytest.raises(DigestError):
            member_digests(tool)
        return
    assert member_digests(tool) == expected["members"]
    assert tool_digest(tool) == expected["digest"]


# ---------------------------------------------------------------------------- globs and files

_LABELS = [
    # (name, address, port globs), label, matches
    (("github", None, None), ("github", "api.github.com", 443), True),
    (("github", None, None), ("GitHub", "api.github.com", 443), False),  # case-sensitive
    (("git*", None, None), ("github", None, None), True),
    (("git*", None, None), (None, None, None), False),
    (("*", None, None), (None, None, None), True),  # an unknown name reads as ""
    (("github", "*.example.com", None), ("github", "api.example.com", 443), True),
    (("github", "*.example.com", None), ("github", None, None), False),  # stdio: no address
    (("github", None, "443"), ("github", "h", 443), True),
    (("github", None, "443"), ("github", "h", 8443), False),
    (("github", None, "8*"), ("github", "h", 8443), True),
    (("github", None, "443"), ("github", "h", None), False),
    (("a[bc]", None, None), ("ab", None, None), True),
]


@pytest.mark.parametrize(("globs", "label", "matches"), _LABELS)
def test_server_matching(
    globs: tuple[str, str | None, str | None], label: tuple[Any, ...], matches: bool
) -> None:
    server = ServerPins(*globs, source=None, tools=())
    assert server.matches(ServerLabel(*label)) is matches


def test_first_matching_server_wins_and_upsert_keeps_order() -> None:
    specific = ServerPins("github", "api.github.com", None, None, ())
    broad = ServerPins("*", None, None, None, ())
    pins = PinFile((specific, broad))
    assert pins.for_server(ServerLabel("github", "api.github.com", 443)) is specific
    assert pins.for_server(ServerLabel("github", "other", 443)) is broad
    assert PinFile((broad,)).for_server(ServerLabel("x", None, None)) is broad
    assert PinFile().for_server(ServerLabel("x", None, None)) is None
    replaced = ServerPins("github", "api.github.com", None, "live", ())
    assert pins.upsert(replaced).servers == (replaced, broad)
    new = ServerPins("docs", None, None, None, ())
    assert pins.upsert(new).servers == (new, specific, broad)  # sorted position
    assert PinFile((broad,)).upsert(new).servers == (new, broad)  # never behind a shadowing glob
    assert PinFile((broad,)).upsert(new).for_server(ServerLabel("docs", None, None)) is new
    late = ServerPins("zed", None, None, None, ())
    assert PinFile((specific,)).upsert(late).servers == (specific, late)


def test_pin_server_pins_every_tool_sorted() -> None:
    server = pin_server(list(reversed(BASE)), name="tickets", port=443, source="live")
    assert [tool.name for tool in server.tools] == sorted(t["name"] for t in BASE)
    assert server.port == "443"
    for pin in server.tools:
        tool = next(t for t in BASE if t["name"] == pin.name)
        assert (pin.digest, dict(pin.members)) == tuple(_reference(tool).values())


def test_pin_server_refuses_ambiguous_and_unrepresentable_tools() -> None:
    twice = pin_server([BASE[0], dict(BASE[0])], name="s")
    assert len(twice.tools) == 1
    with pytest.raises(PinsError) as info:
        pin_server([BASE[0], {**BASE[0], "description": "other"}], name="s")
    assert info.value.reason == "pins_duplicate_tool"
    with pytest.raises(DigestError):
        pin_server([{"name": "t", "description": math.nan}], name="s")
    with pytest.raises(DigestError):
        pin_server(7, name="s")  # type: ignore[arg-type]


def test_golden_pin_file() -> None:
    """The stored file is what the renderer writes, and its digests are the rfc8785 recipe's."""
    text = PIN_FILE.read_text("utf-8")
    pins = parse_pins(text)
    assert render_pins(pins) == text
    tickets = pins.servers[0]
    assert (tickets.name, tickets.address, tickets.port, tickets.source) == (
        "tickets",
        None,
        None,
        "file",
    )
    raw = tomllib.loads(text)  # read independently of our parser
    assert raw["format"] == PINS_FORMAT
    for entry in raw["server"][0]["tool"]:
        tool = next(t for t in BASE if t["name"] == entry["name"])
        assert {"digest": entry["digest"], "members": entry["members"]} == _reference(tool)
    hostile = pins.servers[1].tools[0].name
    assert hostile.startswith('we"ird]\n# [[server]]')
    assert "\u202e" in hostile
    assert "\U000e0041" in hostile


_NAMES = st.text(
    st.one_of(
        st.characters(blacklist_categories=("Cs",)),
        st.sampled_from(['"', "\\", "]", "[", "#", "\n", "\r", "\t", "\x00", "\x7f", "\u2028"]),
    ),
    max_size=16,
)
_DIGESTS = st.sampled_from([DIGEST, "sha256:" + "0" * 64, ABSENT])
_PINS = st.builds(
    ToolPin,
    name=_NAMES,
    digest=st.none() | st.just(DIGEST),
    members=st.dictionaries(st.sampled_from(PROJECTED_MEMBERS), _DIGESTS, min_size=1),
)
_SERVERS = st.builds(
    ServerPins,
    name=_NAMES,
    address=st.none() | _NAMES,
    port=st.none() | _NAMES,
    source=st.none() | _NAMES,
    tools=st.lists(_PINS, max_size=4, unique_by=lambda pin: pin.name).map(tuple),
)
_FILES = st.lists(_SERVERS, max_size=3, unique_by=lambda s: (s.name, s.address, s.port)).map(
    lambda servers: PinFile(tuple(servers))
)


def _sorted(pins: PinFile) -> PinFile:
    return PinFile(
        tuple(
            ServerPins(
                s.name, s.address, s.port, s.source, tuple(sorted(s.tools, key=lambda t: t.name))
            )
            for s in pins.servers
        )
    )


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_FILES)
def test_render_parse_round_trip(pins: PinFile) -> None:
    text = render_pins(pins)
    assert parse_pins(text) == _sorted(pins)
    assert render_pins(parse_pins(text)) == text
    assert tomllib.loads(text)["format"] == PINS_FORMAT
    for line in text.splitlines():  # one value per line whatever the names hold
        assert line == "" or line.startswith(("#", "[", "format", "projection")) or " = " in line


def test_render_refuses_what_toml_cannot_hold() -> None:
    lone = PinFile((ServerPins("s", None, None, None, (ToolPin("\ud800", DIGEST),)),))
    with pytest.raises(PinsError) as info:
        render_pins(lone)
    assert info.value.reason == "pins_unrepresentable"
    bad = PinFile((ServerPins("s", None, None, None, (ToolPin("t", "md5:00"),)),))
    with pytest.raises(PinsError):
        render_pins(bad)


_HEAD = f'format = "{PINS_FORMAT}"\nprojection = "v1"\n'
_TOOL_OK = '[[server.tool]]\nname = "t"\ndigest = "' + DIGEST + '"\n'
_CANARY = "CANARY-9f3e"
_MALFORMED = [
    ("not toml [[[", "pins_not_toml"),
    (f'format = "{_CANARY}\n', "pins_not_toml"),
    ("a = " + "[" * 100_000, "pins_not_toml"),
    ("", "pins_bad_format"),
    (f'format = "{_CANARY}"\nprojection = "v1"\n', "pins_bad_format"),
    ('format = "otel-mcp-health/pins/2"\nprojection = "v1"\n', "pins_bad_format"),
    (f'format = "{PINS_FORMAT}"\n', "pins_bad_projection"),
    (f'format = "{PINS_FORMAT}"\nprojection = "v2"\n', "pins_bad_projection"),
    (_HEAD + f'{_CANARY} = "x"\n', "pins_unknown_key"),
    (_HEAD + "server = 3\n", "pins_bad_type"),
    (_HEAD + "server = [1]\n", "pins_bad_type"),
    (_HEAD + '[server]\nname = "s"\n', "pins_bad_type"),
    (_HEAD + "[[server]]\n", "pins_missing_key"),
    (_HEAD + "[[server]]\nname = 3\n", "pins_bad_type"),
    (_HEAD + '[[server]]\nname = "s"\nport = 443\n', "pins_bad_type"),
    (_HEAD + '[[server]]\nname = "s"\nservers = 1\n', "pins_unknown_key"),
    (_HEAD + '[[server]]\nname = "s"\n[[server.tool]]\n', "pins_missing_key"),
    (_HEAD + '[[server]]\nname = "s"\n[[server.tool]]\nname = "t"\n', "pins_empty_tool"),
    (_HEAD + f'[[server]]\nname = "s"\n{_TOOL_OK}members = 3\n', "pins_bad_type"),
    (_HEAD + f'[[server]]\nname = "s"\n{_TOOL_OK}descripton = "x"\n', "pins_unknown_key"),
    (
        _HEAD + f'[[server]]\nname = "s"\n[[server.tool]]\nname = "t"\ndigest = "{_CANARY}"\n',
        "pins_bad_digest",
    ),
    (
        _HEAD
        + f'[[server]]\nname = "s"\n[[server.tool]]\nname = "t"\ndigest = "{DIGEST.upper()}"\n',
        "pins_bad_digest",
    ),
    (
        _HEAD + '[[server]]\nname = "s"\n[[server.tool]]\nname = "t"\ndigest = "absent"\n',
        "pins_bad_digest",
    ),
    (
        _HEAD + f'[[server]]\nname = "s"\n{_TOOL_OK}[server.tool.members]\nicons = "absent"\n',
        "pins_unknown_key",
    ),
    (
        _HEAD + f'[[server]]\nname = "s"\n{_TOOL_OK}[server.tool.members]\ntitle = "{_CANARY}"\n',
        "pins_bad_digest",
    ),
    (
        _HEAD + f'[[server]]\nname = "s"\n{_TOOL_OK}[server.tool.members]\ntitle = 1\n',
        "pins_bad_type",
    ),
    (_HEAD + f'[[server]]\nname = "s"\n{_TOOL_OK}{_TOOL_OK}', "pins_duplicate_tool"),
    (_HEAD + '[[server]]\nname = "s"\n[[server]]\nname = "s"\n', "pins_duplicate_server"),
]


@pytest.mark.parametrize(("text", "reason"), _MALFORMED)
def test_malformed_pin_files_raise_pins_error_without_quoting(text: str, reason: str) -> None:
    with pytest.raises(PinsError) as info:
        parse_pins(text)
    assert info.value.reason == reason
    assert _CANARY not in str(info.value)
    assert '"' not in info.value.detail or "otel-mcp-health/pins/1" in info.value.detail


def test_not_text_is_a_pins_error() -> None:
    with pytest.raises(PinsError) as info:
        parse_pins(b"format = 1")  # type: ignore[arg-type]
    assert info.value.reason == "pins_not_toml"


def test_partial_and_empty_servers_parse() -> None:
    text = _HEAD + '[[server]]\nname = "s"\n\n[[server]]\nname = "m"\nsource = "mcpb:sha256:00"\n'
    text += '[[server.tool]]\nname = "t"\n[server.tool.members]\nname = "absent"\n'
    pins = parse_pins(text)
    assert pins.servers[0].tools == ()
    assert pins.servers[1].tools == (ToolPin("t", None, {"name": ABSENT}),)
    assert parse_pins(_HEAD) == PinFile()


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
@example("\x00")
@example('format = "otel-mcp-health/pins/1"\nprojection = "v1"\nserver = [{tool = [{}]}]\n')
def test_parse_raises_only_pins_error_on_any_text(text: str) -> None:
    with contextlib.suppress(PinsError):
        parse_pins(text)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_parse_raises_only_pins_error_on_mutated_files(data: st.DataObject) -> None:
    text = PIN_FILE.read_text("utf-8")
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        cut = data.draw(st.integers(0, 40))
        insert = data.draw(st.sampled_from(["", '"', "]", "[[", "\n", "=", "#", "0", "x = 1\n"]))
        text = text[:at] + insert + text[at + cut :]
    try:
        parsed = parse_pins(text)
    except PinsError:
        return
    assert parse_pins(render_pins(parsed)) == parsed


def test_codec_escapes_what_a_reviewer_cannot_see() -> None:
    assert pin_codec.toml_string("plain name") == '"plain name"'
    assert pin_codec.toml_string("a\u202eb\u200dc") == '"a\\u202Eb\\u200Dc"'
    assert pin_codec.toml_string("\U000e0041") == '"\\U000E0041"'
    assert pin_codec.toml_string('"]#\\') == '"\\"]#\\\\"'


def test_the_documented_pin_file_is_exact() -> None:
    """docs/evidence-format.md#pin-file: its example is what the writer makes of its tool."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "evidence-format.md").read_text("utf-8")
    section = doc[doc.index("## Pin file") :]
    tool = json.loads(section.split("```json tool\n", 1)[1].split("```", 1)[0])
    text = section.split("```toml\n", 1)[1].split("```", 1)[0]
    assert parse_pins(text).servers[0].tools[0].members == _reference(tool)["members"]
    server = pin_server([tool], name="github", address="*.example.com", port=443, source="live")
    assert render_pins(PinFile((server,))) == text


def _inline(value: Any) -> str:
    """A minimal TOML writer for the structured fuzz (inline tables and arrays only)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return pin_codec.toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_inline, value)) + "]"
    return (
        "{"
        + ", ".join(f"{pin_codec.toml_string(k)} = {_inline(v)}" for k, v in value.items())
        + "}"
    )


_KEYS = st.sampled_from(
    [
        *("format", "projection", "server", "tool", "address", "port", "source", "digest"),
        *("members", *PROJECTED_MEMBERS, "icons", ""),
    ]
)
_LEAVES = st.one_of(
    st.sampled_from([PINS_FORMAT, "v1", DIGEST, ABSENT, "s", "", "sha256:00"]),
    st.integers(-5, 5),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)
_SHAPES = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=16,
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_KEYS, _SHAPES, max_size=4), st.booleans())
def test_parse_raises_only_pins_error_on_any_toml_shape(
    document: dict[str, Any], valid_head: bool
) -> None:
    """Valid TOML of random shapes over the real keys: a PinFile that re-renders, or PinsError."""
    if valid_head:
        document = {"format": PINS_FORMAT, "projection": "v1"} | document
    text = "".join(f"{pin_codec.toml_string(k)} = {_inline(v)}\n" for k, v in document.items())
    try:
        parsed = parse_pins(text)
    except PinsError:
        return
    assert parse_pins(render_pins(parsed)) == parsed


def test_a_hand_edited_file_in_another_tool_order_reads_the_same_and_rewrites_stably() -> None:
    """Found by the mutation test above: a tool renamed by hand now sorts elsewhere; the reader
    sorts, so the file and its rewrite are the same pins."""
    text = PIN_FILE.read_text("utf-8").replace('name = "search_tickets"', 'name = "a_tickets"')
    parsed = parse_pins(text)
    names = [pin.name for pin in parsed.servers[0].tools]
    assert names == sorted(names)
    assert "a_tickets" in names
    assert parse_pins(render_pins(parsed)) == parsed
