"""Differential tests: our RFC 8785 canonicalizer against the ``rfc8785`` reference package.

For every value both must either produce byte-identical output or both reject it (ours with
``DigestError(digest_unrepresentable)``). Values outside what the reference accepts by design
(nesting deeper than ``_jcs.MAX_DEPTH``, see its docstring) are covered in test_digest.py.
"""

from __future__ import annotations

import enum
import math
import struct
from collections import OrderedDict
from typing import Any

import pytest
import rfc8785
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from otel_mcp_health.core import _jcs
from otel_mcp_health.core.digest import REASON_UNREPRESENTABLE, DigestError, canonicalize

_SAFE = 2**53 - 1

# Characters that stress escaping and ordering: controls, quote, backslash, DEL, U+2028/9,
# BMP characters above the surrogates (U+E000..U+FFFF), supplementary characters, lone surrogates.
_SPECIAL = st.sampled_from(
    [
        *map(chr, range(0x20)),
        '"',
        "\\",
        "/",
        "\x7f",
        "\x80",
        "\u2028",
        "\u2029",
        "\ue000",
        "\ufb01",
        "\uffff",
        "\U00010000",
        "\U0001f600",
        "\U0010ffff",
        "é",
        "日",
        "\ud800",
        "\udfff",
    ]
)
_TEXT = st.text(st.one_of(st.characters(codec=None), _SPECIAL), max_size=12)
_VALID_TEXT = st.text(
    st.one_of(
        st.characters(blacklist_categories=("Cs",)),
        _SPECIAL.filter(lambda c: not 0xD800 <= ord(c) <= 0xDFFF),
    ),
    max_size=12,
)
_EDGE_FLOATS = st.sampled_from(
    [
        0.0,
        -0.0,
        5e-324,
        -5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        1e21,
        1e20,
        9.999999999999999e20,
        1e-7,
        1e-6,
        1.5e-7,
        0.000001234,
        123456789012345680000.0,
        1e16,
        0.1,
        0.3,
        1 / 3,
        100.0,
        2.0**53,
        2.0**60,
        -1e-300,
        math.pi,
        math.nan,
        math.inf,
        -math.inf,
    ]
)
_FLOATS = st.one_of(
    _EDGE_FLOATS,
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=1e-12, max_value=1e25),
    st.integers(0, 2**64 - 1).map(lambda bits: struct.unpack("<d", struct.pack("<Q", bits))[0]),
)
_INTS = st.one_of(
    st.integers(-_SAFE, _SAFE),
    st.sampled_from([_SAFE, -_SAFE, _SAFE + 1, -_SAFE - 1, 2**53, -(2**53), 2**64, -(2**70), 0]),
    st.integers(),
)
_SCALARS = st.one_of(st.none(), st.booleans(), _INTS, _FLOATS, _TEXT)
_KEYS = st.one_of(
    _TEXT, _VALID_TEXT, st.sampled_from(["a", "b", "\ue000", "\U0001f600", "\ufb01", "aa", ""])
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(_KEYS, children, max_size=6),
    )


JSON_VALUES = st.recursive(_SCALARS, _containers, max_leaves=40)
VALID_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-_SAFE, _SAFE),
        _FLOATS.filter(math.isfinite),
        _VALID_TEXT,
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(_VALID_TEXT, children, max_size=6)
    ),
    max_leaves=40,
)


def _reference(value: Any) -> bytes | None:
    try:
        return rfc8785.dumps(value)
    except (ValueError, TypeError, AttributeError, RecursionError):
        return None  # rejected (UnicodeEncodeError is a ValueError)


def _ours(value: Any) -> bytes | None:
    try:
        return canonicalize(value)
    except DigestError as exc:
        reason = exc.reason
    assert reason == REASON_UNREPRESENTABLE
    return None


def _assert_same(value: Any) -> None:
    assert _ours(value) == _reference(value)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON_VALUES)
@example({"\U0001f600": 1, "\ue000": 2, "a": 3})
@example({"x": float("nan")})
@example(["\udfff0\udfff", 1.5])
@example(["\udfff0\udfff", "\udfff0\udfff", 1.5])
@example({"\udfff0\udfff": 2.5, "k": 1.5})
@example([2**53 - 1, -(2**53 - 1), 2**53])
def test_matches_rfc8785(value: Any) -> None:
    _assert_same(value)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALID_JSON)
def test_valid_json_is_accepted_and_identical(value: Any) -> None:
    ours = canonicalize(value)
    assert ours == rfc8785.dumps(value)


@settings(max_examples=500, deadline=None)
@given(_FLOATS)
def test_floats_match(value: float) -> None:
    _assert_same(value)
    _assert_same([value, {"k": value}])
    if math.isfinite(value):
        assert _jcs.format_float(value).encode() == rfc8785.dumps(value)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_VALID_TEXT, st.integers(0, 9), min_size=2, max_size=8))
def test_key_order_is_utf16(value: dict[str, int]) -> None:
    _assert_same(value)
    _assert_same({"outer": value, "\U0001f600": [value]})


@pytest.mark.parametrize("depth", [1, 10, 100, 300, _jcs.MAX_DEPTH - 5])
def test_deep_nesting_within_limit(depth: int) -> None:
    nested_list: Any = 1.5
    nested_dict: Any = {"\U0001f600": 1, "\ue000": 0.5}
    for _ in range(depth):
        nested_list = [nested_list]
        nested_dict = {"k": nested_dict}
    _assert_same(nested_list)
    _assert_same(nested_dict)


def test_deep_nesting_beyond_both_limits() -> None:
    nested: Any = 0
    for _ in range(50_000):
        nested = [nested]
    assert _reference(nested) is None
    assert _ours(nested) is None


def test_shape_reuse_with_changing_value_types() -> None:
    """Objects with the same member names share a cached shape; value types may differ."""
    for value in (
        {"a": "x", "b": "y"},
        {"a": 1, "b": "y"},
        {"b": "y", "a": "x"},
        {"a": [], "b": None},
    ):
        _assert_same(value)
    _assert_same({_Name.A: "x"})
    _assert_same({"a\u2028": "x"})
    _assert_same({"a\u2028": 1.5, _Name.A.value + "!": 2})


def test_wide_objects_match() -> None:
    wide = {f"k{i}": i for i in range(500)} | {"\U0001f600": 1, "\ufb01": 2}
    _assert_same(wide)
    _assert_same([wide, wide])


class _Color(enum.IntEnum):
    RED = 1


class _Name(enum.StrEnum):
    A = "a\u2028"


class _Ratio(float):
    pass


@pytest.mark.parametrize(
    "value",
    [
        _Color.RED,
        [_Color.RED, _Name.A, _Ratio(0.5)],
        {_Name.A: _Name.A},
        OrderedDict([("b", 1), ("a", 2)]),
        (1, (2.5, "x")),
        {"t": (), "l": [], "d": {}},
        "",
        True,
        None,
        -0.0,
        {"a": set()},
        frozenset(),
        b"x",
        {1.5: 1},
        {True: 1},
        {("a",): 1},
    ],
    ids=repr,
)
def test_types_and_subclasses_match(value: Any) -> None:
    _assert_same(value)


# ---- the C-encoder fast path ------------------------------------------------------------------
_PLAIN_TEXT = st.lists(
    st.one_of(
        st.characters(max_codepoint=0xFFFF, blacklist_categories=("Cs",)),
        st.sampled_from(['"', "\\", "\\u0041", "\x7f", "\u2028", "\x00", "\x1f", "\ue000"]),
    ),
    max_size=12,
).map("".join)
PLAIN_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-_SAFE, _SAFE), _PLAIN_TEXT, _TEXT),
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(_KEYS, children, max_size=6)
    ),
    max_leaves=40,
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PLAIN_JSON)
@example({"k": "\\u00e9 is not an escape", "\\": "\\\\u0041"})
@example(["\ud83d\ude00"])
def test_fast_path_matches_rfc8785(value: Any) -> None:
    """Float-free values take the C encoder; it must agree byte for byte (or defer)."""
    fast = _jcs._fast_text(value)
    reference = _reference(value)
    if fast is not None:
        assert fast.encode("utf-8") == reference
    _assert_same(value)


def test_fast_path_is_taken_for_plain_catalogs() -> None:
    tool = {
        "name": "a",
        "description": 'caf\u00e9 \u2028 \x7f "q" \\',
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"type": "integer", "maximum": 10}},
            "required": ["n"],
        },
        "annotations": {"readOnlyHint": True},
    }
    assert _jcs._fast_text([tool]) is not None
    assert _jcs._fast_text([{"x": 1.5}]) == '[{"x":1.5}]'  # repr is already ES6 here
    assert _jcs._fast_text([{"x": 1e-7}]) is None  # "1e-07" is not: the ECMAScript writer
    assert _jcs._fast_text([{"x": 100.0}]) is None  # "100.0" vs "100"
    assert _jcs._fast_text(["\ud83d\ude00"]) is None  # two lone surrogates, not one emoji
    assert _jcs._fast_text(["\U0001f600"]) == '["\U0001f600"]'  # a value: order unaffected
    assert _jcs._fast_text([{"\U0001f600": 1}]) is None  # a key: UTF-16 order matters
