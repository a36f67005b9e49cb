"""How the time enters a session's catalog verdict (private; docs/model.md#catalog)."""

from __future__ import annotations

from enum import Enum

from otel_mcp_health.core.vocabulary import NS_PER_S


class Freshness(Enum):
    """How the time enters a session's catalog verdict (docs/model.md#catalog): the only part of
    the verdict that changes while no span arrives."""

    #: The server tells of changes and the session heard every one: the catalog's age never
    #: matters.
    HEARD = "heard"
    #: No time to judge by, or no complete discovery to date: the age is unknown.
    UNDATED = "undated"
    #: Discovered within the maximum age.
    IN_AGE = "in_age"
    #: Discovered longer ago than the maximum age: its refresh is overdue.
    OVERDUE = "overdue"


def freshness(dated: Freshness | int, now: int | None, max_age_s: float) -> Freshness:
    """The only way ``now`` enters the catalog rules: the bounded refresh policy (a memo key of
    the catalog verdict). ``dated``: :meth:`.Session.dated`."""
    if isinstance(dated, Freshness):
        return dated
    if now is None:
        return Freshness.UNDATED
    return Freshness.OVERDUE if now - dated > max_age_s * NS_PER_S else Freshness.IN_AGE
