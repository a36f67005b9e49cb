"""Ordered rule tables: the shape every classifier in the core shares.

A rule set is a tuple of named :class:`Rule` rows. Each row looks at a precomputed, immutable
context and either returns a :class:`Decision` (verdict, reason code, next action) or ``None``.
The first row that decides wins, exactly like the numbered tables in docs/model.md. Keeping the
rules as data lets the tests parametrize over the rows and lets ``docs/rules.md``/the README show
the tables generated from the code (``otel-mcp-health rules``), so the documentation cannot drift.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from otel_mcp_health.core.vocabulary import NextAction

ContextT = TypeVar("ContextT")
VerdictT = TypeVar("VerdictT")


@dataclass(frozen=True, slots=True)
class Decision(Generic[VerdictT]):
    """What a rule concluded: the verdict, a short sanitized reason code, the next action."""

    verdict: VerdictT
    reason: str
    next_action: NextAction


@dataclass(frozen=True, slots=True)
class Rule(Generic[ContextT, VerdictT]):
    """One named row of a rule table.

    ``verdicts`` lists every verdict the row can return (for the documentation table and for the
    exhaustiveness tests); ``summary`` says in one line when the row matches.
    """

    name: str
    verdicts: tuple[VerdictT, ...]
    summary: str
    decide: Callable[[ContextT], Decision[VerdictT] | None]


def first_match(
    rules: Sequence[Rule[ContextT, VerdictT]], context: ContextT
) -> tuple[Rule[ContextT, VerdictT], Decision[VerdictT]]:
    """Return the first rule that decides, and its decision.

    Every table ends with an unconditional row, so this always finds one; a table without such a
    row is a programming error and raises ``LookupError`` (tests cover every table).
    """
    for rule in rules:
        decision = rule.decide(context)
        if decision is not None:
            return rule, decision
    msg = "rule table has no final catch-all row"
    raise LookupError(msg)


def render_table(rules: Sequence[Rule[ContextT, VerdictT]]) -> str:
    """Render a rule table as Markdown (``#``, rule, verdicts, when)."""
    lines = ["| # | rule | verdict | when |", "|---|---|---|---|"]
    for index, rule in enumerate(rules, start=1):
        verdicts = " / ".join(f"`{v}`" for v in rule.verdicts)
        lines.append(f"| {index} | `{rule.name}` | {verdicts} | {rule.summary} |")
    return "\n".join(lines)
