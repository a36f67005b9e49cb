"""Differential tests: every path of our RFC 8785 canonicalizer against the ``rfc8785`` package.

For every value and every path (the ``orjson`` and the standard library fast paths, the exact
path alone) both must either produce byte-identical output or both reject it (ours with
``JcsError``, which the digest reports as ``DigestError(digest_unrepresentable)``). Values outside
what the reference accepts by design (nesting deeper than ``jcs.MAX_DEPTH``, see its docstring)
are covered in test_digest.py.
"""

from __future__ import annotations

import enum
import math
import struct
import subprocess
import sys
from collections import OrderedDict
from typing import Any

import orjson
import pytest
import rfc8785
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from otel_mcp_health.core import jcs
from otel_mcp_health.core.digest import DigestError, canonicalize
from otel_mcp_health.core.reasons import DigestReason

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


FAST_ENCODERS = ("orjson", "stdlib")
ENCODERS = (*FAST_ENCODERS, "exact")
encoders = pytest.mark.parametrize("encoder", ENCODERS)
fast_encoders = pytest.mark.parametrize("encoder", FAST_ENCODERS)


def _ours(value: Any, encoder: str = jcs.ENCODER) -> bytes | None:
    try:
        return jcs.canonicalize(value, encoder=encoder)
    except jcs.JcsError as exc:
        kind = exc.kind
    assert kind.isidentifier()
    with pytest.raises(DigestError) as info:  # what the digest reports for it
        canonicalize(value)
    assert info.value.reason == DigestReason.UNREPRESENTABLE
    return None


def _assert_same(value: Any, encoder: str = jcs.ENCODER) -> None:
    assert _ours(value, encoder) == _reference(value)


def _fast(value: Any, encoder: str) -> bytes | None:
    """The fast path's own answer (``None``: it hands the value to the exact path)."""
    proof = jcs.type_proof(value)
    assert proof is not None
    try:
        return jcs._FAST[encoder](value, proof)
    except jcs._Defer:
        return None


def test_orjson_is_installed_for_the_tests() -> None:
    """The [fast] extra is part of the test set-up: its path must really run here."""
    assert jcs.ENCODER == "orjson"


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON_VALUES)
@example({"\U0001f600": 1, "\ue000": 2, "a": 3})
@example({"x": float("nan")})
@example(["\udfff0\udfff", 1.5])
@example(["\udfff0\udfff", "\udfff0\udfff", 1.5])
@example({"\udfff0\udfff": 2.5, "k": 1.5})
@example([2**53 - 1, -(2**53 - 1), 2**53])
def test_matches_rfc8785(value: Any) -> None:
    for encoder in ENCODERS:
        _assert_same(value, encoder)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALID_JSON)
def test_valid_json_is_accepted_and_identical(value: Any) -> None:
    reference = rfc8785.dumps(value)
    for encoder in ENCODERS:
        assert jcs.canonicalize(value, encoder=encoder) == reference
    assert canonicalize(value) == reference


@settings(max_examples=500, deadline=None)
@given(_FLOATS)
def test_floats_match(value: float) -> None:
    for encoder in ENCODERS:
        _assert_same(value, encoder)
        _assert_same([value, {"k": value}], encoder)
    if math.isfinite(value):  # each encoder's token, rewritten, is the ECMAScript form
        for token in (repr(value).encode(), orjson.dumps(value)):
            assert jcs._float_text(token) == rfc8785.dumps(value)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_VALID_TEXT, st.integers(0, 9), min_size=2, max_size=8))
def test_key_order_is_utf16(value: dict[str, int]) -> None:
    for encoder in ENCODERS:
        _assert_same(value, encoder)
        _assert_same({"outer": value, "\U0001f600": [value]}, encoder)


@encoders
@pytest.mark.parametrize("depth", [1, 10, 100, 300, jcs.MAX_DEPTH - 5])
def test_deep_nesting_within_limit(encoder: str, depth: int) -> None:
    nested_list: Any = 1.5
    nested_dict: Any = {"\U0001f600": 1, "\ue000": 0.5}
    for _ in range(depth):
        nested_list = [nested_list]
        nested_dict = {"k": nested_dict}
    _assert_same(nested_list, encoder)
    _assert_same(nested_dict, encoder)


@encoders
def test_deep_nesting_beyond_both_limits(encoder: str) -> None:
    nested: Any = 0
    for _ in range(50_000):
        nested = [nested]
    assert _reference(nested) is None
    assert _ours(nested, encoder) is None


@encoders
def test_shape_reuse_with_changing_value_types(encoder: str) -> None:
    """Objects with the same member names share a cached shape; value types may differ."""
    for value in (
        {"a": "x", "b": "y"},
        {"a": 1, "b": "y"},
        {"b": "y", "a": "x"},
        {"a": [], "b": None},
    ):
        _assert_same(value, encoder)
    _assert_same({_Name.A: "x"}, encoder)
    _assert_same({"a\u2028": "x"}, encoder)
    _assert_same({"a\u2028": 1.5, _Name.A.value + "!": 2}, encoder)


@encoders
def test_wide_objects_match(encoder: str) -> None:
    wide = {f"k{i}": i for i in range(500)} | {"\U0001f600": 1, "\ufb01": 2}
    _assert_same(wide, encoder)
    _assert_same([wide, wide], encoder)


class _Color(enum.IntEnum):
    """An ``IntEnum``: encoded as the reference encodes it."""

    RED = 1


class _Name(enum.StrEnum):
    """A ``StrEnum`` whose value holds U+2028, as a value and as an object key."""

    A = "a\u2028"


class _Ratio(float):
    """A ``float`` subclass."""


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
@encoders
def test_types_and_subclasses_match(encoder: str, value: Any) -> None:
    _assert_same(value, encoder)


# ---- the C-encoder fast paths ----------------------------------------------------------------
#: String content that looks like JSON structure or numbers: the float rewrite must leave it alone.
_LOOKALIKE = st.sampled_from(
    [":1.0,", '"', "\\", '\\"', ",2e5]", "[1.5", "v1.2", "0.0", "1E+21", '":1.0}', "x\\\\"]
)
_PLAIN_TEXT = st.lists(
    st.one_of(
        st.characters(max_codepoint=0xFFFF, blacklist_categories=("Cs",)),
        st.sampled_from(['"', "\\", "\\u0041", "\x7f", "\u2028", "\x00", "\x1f", "\ue000"]),
        _LOOKALIKE,
    ),
    max_size=12,
).map("".join)
PLAIN_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-_SAFE, _SAFE),
        _INTS,
        _FLOATS,
        _PLAIN_TEXT,
        _TEXT,
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.one_of(_KEYS, _PLAIN_TEXT), children, max_size=6),
    ),
    max_leaves=40,
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PLAIN_JSON)
@example({"k": "\\u00e9 is not an escape", "\\": "\\\\u0041"})
@example(["\ud83d\ude00"])
@example({"a:1.0,": [1.0, 'x",1.0,"', 1e-7], "\\": -0.0, '"': {"\U0001f600x": 2.5}})
@example([":1.0", 100.0, "\\", 1e21, '\\"', 5e-324])
def test_fast_path_matches_rfc8785(value: Any) -> None:
    """Each fast path agrees with rfc8785 byte for byte, or hands the value to the exact path."""
    reference = _reference(value)
    for encoder in FAST_ENCODERS:
        if jcs.type_proof(value) is not None and type(value) in (dict, list):
            fast = _fast(value, encoder)
            if fast is not None:
                assert fast == reference
        _assert_same(value, encoder)


@fast_encoders
def test_fast_path_is_taken_for_plain_catalogs(encoder: str) -> None:
    tool = {
        "name": "a",
        "description": 'caf\u00e9 \u2028 \x7f "q" \\ :1.0, \U0001f600',
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"type": "integer", "maximum": 10, "minimum": 0.0}},
            "required": ["n"],
        },
        "annotations": {"readOnlyHint": True},
    }
    assert _fast(tool, encoder) == rfc8785.dumps(tool)
    assert _fast([{"x": 1.5}], encoder) == b'[{"x":1.5}]'  # the encoders' text is ES6 here
    assert _fast([{"x": 1e-7}], encoder) == b'[{"x":1e-7}]'  # rewritten: "1e-07" in repr
    assert _fast([{"x": 100.0}], encoder) == b'[{"x":100}]'  # rewritten: "100.0"
    assert _fast([{"x": "100.0"}], encoder) == b'[{"x":"100.0"}]'  # a string: left alone
    assert _fast(["\ud83d\ude00"], encoder) is None  # two lone surrogates, not one emoji
    assert _fast(["\U0001f600"], encoder) == '["\U0001f600"]'.encode()  # a value: order unaffected
    assert _fast([{"\U0001f600": 1}], encoder) is None  # a key: UTF-16 order matters
    assert _fast([{"x": math.nan}], encoder) is None  # orjson would write null
    assert _fast([{"x": None}], encoder) == b'[{"x":null}]'
    assert _fast([2**53], encoder) is None


def test_non_plain_types_take_the_exact_path() -> None:
    """Types the encoders would write but rfc8785 treats differently never reach them."""
    for value in ([_Color.RED], [_Name.A], {"k": _Ratio(0.5)}, OrderedDict(a=1), [enum.Enum]):
        assert jcs.type_proof(value) is None
        _assert_same(value)


def test_without_orjson_the_standard_library_encoder_is_used() -> None:
    code = (
        "import sys; sys.modules['orjson'] = None\n"
        "from otel_mcp_health.core import jcs\n"
        "assert jcs.ENCODER == 'stdlib', jcs.ENCODER\n"
        "assert jcs.canonicalize({'b': 1e-7, 'a': [1.0]}) == b'{\"a\":[1],\"b\":1e-7}'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
