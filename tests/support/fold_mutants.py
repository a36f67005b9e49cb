"""Folds broken on purpose: they keep state from one request to the next.

Each wraps a correct fold in a cache that answers a request with the records of an earlier one
that looked the same by a partial key. The fold's purity property must fail on each of them
(tests/unit/test_fold_purity.py), whatever the cache held before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable
from typing import Protocol

from otel_mcp_health.core.facts import Fact
from otel_mcp_health.core.fold import Folded
from otel_mcp_health.core.observations import Observed


class FoldFunction(Protocol):
    """The signature of ``core.fold.fold``."""

    def __call__(self, seed: Observed, facts: Iterable[Fact], *, network: str | None) -> Folded: ...


Key = Callable[[Observed, list[Fact], str | None], Hashable]


def _cached(fold: FoldFunction, key: Key) -> FoldFunction:
    """``fold`` behind a cache keyed by ``key``: a request with a known key gets the earlier
    request's records."""
    cache: dict[Hashable, Folded] = {}

    def cached(seed: Observed, facts: Iterable[Fact], *, network: str | None) -> Folded:
        listed = list(facts)
        found = key(seed, listed, network)
        if found not in cache:
            cache[found] = fold(seed, listed, network=network)
        return cache[found]

    return cached


def _first(facts: list[Fact]) -> Fact | None:
    return facts[0] if facts else None


def cached_by_seed_transport_and_first_fact(fold: FoldFunction) -> FoldFunction:
    """A cache keyed by the seed's values, the session's transport and the first fact."""

    def key(seed: Observed, facts: list[Fact], network: str | None) -> Hashable:
        seeded = tuple(getattr(seed, f.name) for f in dataclasses.fields(seed))
        return seeded, network, _first(facts)

    return _cached(fold, key)


def cached_by_first_fact(fold: FoldFunction) -> FoldFunction:
    """A cache keyed by the first fact alone."""
    return _cached(fold, lambda seed, facts, network: _first(facts))


MUTANTS: tuple[Callable[[FoldFunction], FoldFunction], ...] = (
    cached_by_seed_transport_and_first_fact,
    cached_by_first_fact,
)
