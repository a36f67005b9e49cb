"""Retry budgets per failed layer (docs/model.md#incidents): how many automatic retries are sane?

Alert on incidents, not attempts, and cap retries per layer: a transport failure may be retried
within a small fixed budget; an expired credential (``invalid_token``, a 401, an OAuth flow
error) deserves exactly one refresh; a missing scope and a protocol error deserve none (a person
or a contract change has to act); a silent side effect none until reconciled; a false success
none (verify the destination first). Execution failures follow the tool's own retry policy, which
the wire does not show, so they have no budget here.

The product observes and advises: these budgets only flag attempts beyond them
(``mcp_health.retry.over_budget``); nothing here retries or blocks anything.
"""

from __future__ import annotations

from typing import Final

from otel_mcp_health.core.vocabulary import FirstFailedLayer, Verdict

#: Automatic retries a transport failure may get before it is an outage, not a blip.
TRANSPORT_RETRY_BUDGET: Final = 3
_REFRESH_ONCE: Final = frozenset({"invalid_token", "http_401", "oauth_error"})


def retry_budget(verdict: Verdict, layer: FirstFailedLayer, reason: str) -> int | None:
    """Automatic retries allowed after a failure like this one; ``None`` = no opinion."""
    if verdict in (Verdict.EFFECT_UNKNOWN, Verdict.FALSE_SUCCESS):
        return 0
    if layer is FirstFailedLayer.TRANSPORT:
        return TRANSPORT_RETRY_BUDGET
    if layer is FirstFailedLayer.AUTHORIZATION:
        return 1 if reason in _REFRESH_ONCE else 0
    if layer is FirstFailedLayer.PROTOCOL:
        return 0
    return None


def over_budget(verdict: Verdict, layer: FirstFailedLayer, reason: str, attempt: int) -> bool:
    """Whether the ``attempt``-th failure of one incident (1 = the first) exceeds the budget."""
    budget = retry_budget(verdict, layer, reason)
    return budget is not None and attempt - 1 > budget
