"""The fold keeps no state from one request to the next, and the property that says so catches a
fold that does (core.fold).

A fold that kept state would answer a request with what an earlier request folded into. The
property below therefore folds, next to each example, requests that share its seed, its
transport and its first fact but whose records are known in advance to differ: the last
observation of the output schema wins, and the seed's own fields come through. Two caching
mutants (tests/support/fold_mutants.py) must fail it in every example, from an empty cache and
from one that another request filled.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.fold_mutants import MUTANTS, FoldFunction
from tests.support.fold_strategies import FACTS, NETWORKS, SEEDS

from otel_mcp_health.core import facts as F
from otel_mcp_health.core.fold import fold
from otel_mcp_health.core.observations import Observed

#: The fields the fold copies from the seed and no fact writes.
_SEEDED = ("method", "tool_name", "read_only", "request_id")


def _fields(seen: Observed) -> dict[str, object]:
    return {f.name: getattr(seen, f.name) for f in dataclasses.fields(seen)}


def assert_pure(
    fold_with: FoldFunction,
    seed: Observed,
    facts: list[F.Fact],
    other: list[F.Fact],
    network: str | None,
) -> None:
    """``fold_with`` leaves its inputs untouched, and what it folds depends on the whole of its
    inputs and on nothing folded before."""
    seed_before, facts_before = _fields(seed), list(facts)
    first = _fields(fold_with(seed, facts, network=network))
    assert (_fields(seed), facts) == (seed_before, facts_before)
    # Same seed, transport and first fact (WriteStarted alone writes nothing), a known answer.
    lead = list(facts) or [F.WriteStarted()]
    for valid in (True, False):
        shared = fold_with(
            dataclasses.replace(seed), [*lead, F.OutputSchema(valid)], network=network
        )
        assert shared.output_schema_valid is valid
    # Same facts and transport, another seed: the seed's fields are the new seed's.
    renamed = dataclasses.replace(
        seed,
        method=f"{seed.method}/renamed",
        tool_name=f"{seed.tool_name}/renamed",
        read_only=not seed.read_only,
        request_id=f"{seed.request_id}/renamed",
    )
    again = fold_with(renamed, list(facts), network=network)
    assert {n: getattr(again, n) for n in _SEEDED} == {n: getattr(renamed, n) for n in _SEEDED}
    fold_with(dataclasses.replace(seed), other, network=network)
    assert _fields(fold_with(dataclasses.replace(seed), list(facts), network=network)) == first


@given(SEEDS, st.lists(FACTS, max_size=8), st.lists(FACTS, max_size=8), NETWORKS)
def test_the_fold_is_pure_and_deterministic(
    seed: Observed, facts: list[F.Fact], other: list[F.Fact], network: str | None
) -> None:
    assert_pure(fold, seed, facts, other, network)


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.__name__)
@settings(max_examples=50)
@given(SEEDS, st.lists(FACTS, max_size=8), st.lists(FACTS, max_size=8), NETWORKS)
def test_the_property_catches_a_fold_that_keeps_state(
    mutant: object,
    seed: Observed,
    facts: list[F.Fact],
    other: list[F.Fact],
    network: str | None,
) -> None:
    """Every example catches each mutant, with its cache empty and with it filled by another
    request of the same seed first (which may share the first fact)."""
    assert callable(mutant)
    for warm in (False, True):
        cached = mutant(fold)
        if warm:
            cached(dataclasses.replace(seed), other, network=network)
        with pytest.raises(AssertionError):
            assert_pure(cached, seed, facts, other, network)
