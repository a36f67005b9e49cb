"""The type proof (``jcs.type_proof``), the digest cache's key: equal proofs iff identical values.

"Identical" is stricter than ``==``: the same exact types everywhere (``True``, ``1`` and ``1.0``
differ, so do ``0.0`` and ``-0.0``, a list and a tuple, a ``str`` and a ``str`` subclass), the
same members in the same order. Sharing (one object referenced twice) and who else holds a
reference must not matter.
"""

from __future__ import annotations

import copy
import enum
import math
import struct
from collections import OrderedDict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_mcp_health.core import jcs

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([0, 1, -1, 0.0, -0.0, 1.0, -1.0, math.nan, math.inf, 2**53, 2.0**53]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(codec=None), max_size=8),  # lone surrogates included
)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=4), children, max_size=5),
    ),
    max_leaves=30,
)


def _identical(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_identical(a[k], b[k]) for k in a)
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(map(_identical, a, b))
    if type(a) is float:
        return struct.pack("<d", a) == struct.pack("<d", b)
    return bool(a == b)


#: Values ``==`` to each other (or to themselves) that the proof must tell apart.
_LOOKALIKES = [True, 1, 1.0, False, 0, 0.0, -0.0, None, "1", [1], (1,), {"a": 1}, {"a": True}]


class _Text(str):
    """A ``str`` subclass: it has no type proof."""


class _Dict(dict[str, Any]):
    """A ``dict`` subclass: it has no type proof."""


class _Small(enum.IntEnum):
    """An ``IntEnum``: it has no type proof, though its member is ``==`` to an int."""

    ONE = 1


def test_lookalikes_have_distinct_proofs() -> None:
    proofs = [jcs.type_proof(value) for value in _LOOKALIKES]
    assert None not in proofs
    assert len(set(proofs)) == len(_LOOKALIKES)


def test_subclasses_and_foreign_objects_have_no_proof() -> None:
    for value in (_Text("a"), _Dict(a=1), _Small.ONE, OrderedDict(a=1), {1, 2}, str, len, 1j):
        assert jcs.type_proof(value) is None
        assert jcs.type_proof({"k": [value]}) is None
        assert jcs.type_proofs([{"k": 1}, {"k": value}]) is None


def test_member_order_and_sharing() -> None:
    assert jcs.type_proof({"a": 1, "b": 2}) != jcs.type_proof({"b": 2, "a": 1})
    word = "".join(["sha", "red"])
    shared = [word, word, {"k": word}]
    assert jcs.type_proof(shared) == jcs.type_proof(["shared", "shared", {"k": "shared"}])
    before = jcs.type_proof(shared)
    held = [word] * 10  # others holding references changes nothing
    assert jcs.type_proof(shared) == before
    assert held


def test_cycles_and_deep_nesting_have_no_proof() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    assert jcs.type_proof(cyclic) is None
    assert jcs.type_proof(deep) is None
    assert jcs.type_proofs([[1], cyclic]) is None


def test_batch_equals_single_proofs() -> None:
    values = [{"name": "a"}, [1.5, None], "x", {"n": {"deep": [True, -0.0]}}]
    assert jcs.type_proofs(values) == [jcs.type_proof(v) for v in values]
    assert jcs.type_proofs([]) == []


def test_non_finite_floats_are_seen_in_the_proof() -> None:
    for value in (math.nan, math.inf, -math.inf, -math.nan):
        proof = jcs.type_proof({"x": value})
        assert proof is not None
        assert jcs._NON_FINITE.search(proof)
    for value in (0.0, -0.0, 1e308, -1.7976931348623157e308, 5e-324):
        proof = jcs.type_proof({"x": value})
        assert proof is not None
        assert not jcs._NON_FINITE.search(proof)


_PAIRS = st.one_of(
    st.tuples(JSON_VALUES, JSON_VALUES),
    JSON_VALUES.map(lambda v: (v, copy.deepcopy(v))),
    st.tuples(
        st.lists(st.sampled_from(_LOOKALIKES), max_size=4),
        st.lists(st.sampled_from(_LOOKALIKES), max_size=4),
    ),
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PAIRS)
def test_equal_proofs_iff_identical(pair: tuple[Any, Any]) -> None:
    a, b = pair
    proof_a, proof_b = jcs.type_proof(a), jcs.type_proof(b)
    assert proof_a is not None
    assert proof_b is not None
    assert (proof_a == proof_b) == _identical(a, b)
