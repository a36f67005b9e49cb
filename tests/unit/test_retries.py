"""Retry budgets per failed layer (SPEC §6)."""

from __future__ import annotations

import pytest

from otel_mcp_health.core.retries import TRANSPORT_RETRY_BUDGET, over_budget, retry_budget
from otel_mcp_health.core.vocabulary import FirstFailedLayer as L
from otel_mcp_health.core.vocabulary import Verdict as V  # noqa: N817 - V.HEALTHY reads as the verdict table it checks


@pytest.mark.parametrize(
    ("verdict", "layer", "reason", "budget"),
    [
        (V.TRANSPORT_ERROR, L.TRANSPORT, "connection_refused", TRANSPORT_RETRY_BUDGET),
        (V.NEEDS_AUTH, L.AUTHORIZATION, "invalid_token", 1),
        (V.NEEDS_AUTH, L.AUTHORIZATION, "http_401", 1),
        (V.NEEDS_AUTH, L.AUTHORIZATION, "oauth_error", 1),
        (V.NEEDS_AUTH, L.AUTHORIZATION, "insufficient_scope", 0),
        (V.NEEDS_AUTH, L.AUTHORIZATION, "http_403", 0),
        (V.PROTOCOL_ERROR, L.PROTOCOL, "jsonrpc_-32602", 0),
        (V.EFFECT_UNKNOWN, L.EXECUTION, "timeout", 0),
        (V.EFFECT_UNKNOWN, L.TRANSPORT, "connection_lost", 0),
        (V.FALSE_SUCCESS, L.OUTCOME, "verifier_failed", 0),
        (V.TOOL_FAILED, L.EXECUTION, "is_error", None),
    ],
)
def test_budgets(verdict: V, layer: L, reason: str, budget: int | None) -> None:
    assert retry_budget(verdict, layer, reason) == budget


def test_over_budget_counts_retries_after_the_first_failure() -> None:
    flags = [over_budget(V.NEEDS_AUTH, L.AUTHORIZATION, "invalid_token", n) for n in (1, 2, 3)]
    assert flags == [False, False, True]
    assert not over_budget(V.TOOL_FAILED, L.EXECUTION, "is_error", 50)
    assert over_budget(V.PROTOCOL_ERROR, L.PROTOCOL, "jsonrpc_-32602", 2)
