"""Per-session memo of whole call judgements (private; docs/performance.md).

A session's ``tools/call`` spans mostly repeat: the same tool, the same outcome, under session
facts that have not changed since the last call. Everything the engine derives for such a call
from the session (its handshake facts, its catalog verdict, the verdict judged on what the call's
agent was offered, the judgement and whether that offer overruled a reported install) is then
what it derived last time, so it is kept per session under:

* the session's :attr:`~otel_mcp_health.processor._sessions.Session.generation` and the version
  of its server's catalog (which the session's other sessions change): either changed, and
  every kept judgement of the session is dropped;
* the call's decoded shape (:class:`~otel_mcp_health.processor._memo.Decoded`, interned by the
  engine's memo, so one identity stands for one set of decoded attribute values);
* the side of the session's refresh deadline the call ended on (the only way the time enters a
  catalog verdict, :meth:`~otel_mcp_health.processor._sessions.Session.dated`).

What happens per call stays per call: findings added, the authorization failure carried on,
silent calls remembered, counters, incident attempts, the inherited catalog's age. A span with
progress events or without an end time is judged without this memo (its live state is its own).

Bounded: at most :data:`MAX_REPEATS` judgements per session (all dropped when full), each holding
references to judgements the engine's memo already keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from otel_mcp_health.processor._freshness import Freshness
from otel_mcp_health.processor._memo import Decoded, Judged

if TYPE_CHECKING:  # the session holds these: a runtime import would be circular
    from otel_mcp_health.processor._sessions import Session

#: Judgements one session keeps at once (a session calls a handful of tools in a few outcomes).
MAX_REPEATS: Final = 16

#: A kept judgement's key: the decoded shape, and ``None`` when the time does not matter, else
#: whether the call ended past the session's refresh deadline.
RepeatKey = tuple[Decoded, bool | None]


@dataclass(slots=True, frozen=True)
class Repeat:
    """A call judgement as the engine derived it from the session, and whether it was judged on
    its agent's offered tools against a reported install that reads otherwise."""

    judged: Judged
    overruled: bool


@dataclass(slots=True, eq=False)
class SessionRepeats:
    """One session's kept judgements and the state they were derived in."""

    generation: int = -1
    #: The version of the session's server catalog (``-1``: none; joining another server is a
    #: new generation).
    server_version: int = -1
    #: :meth:`Session.dated` in that state.
    dated: Freshness | int = -1
    kept: dict[RepeatKey, Repeat] = field(default_factory=dict)


def find(
    session: Session, decoded: Decoded, now: int, max_age_ns: float
) -> tuple[RepeatKey, Repeat | None]:
    """The key of a call of shape ``decoded`` ending at ``now``, and its kept judgement (if the
    session has not changed since it was derived)."""
    repeats = session.repeats
    server = session.server_catalog
    version = -1 if server is None else server.version
    if repeats.generation != session.generation or repeats.server_version != version:
        repeats.generation, repeats.server_version = session.generation, version
        repeats.dated = session.dated()
        repeats.kept.clear()
    dated = repeats.dated
    key = (decoded, now - dated > max_age_ns if isinstance(dated, int) else None)
    return key, repeats.kept.get(key)


def keep(session: Session, key: RepeatKey, repeat: Repeat) -> Repeat:
    """Keep ``repeat`` under ``key`` (:func:`find` just returned that key: the session has not
    changed since)."""
    kept = session.repeats.kept
    if len(kept) >= MAX_REPEATS:
        kept.clear()
    kept[key] = repeat
    return repeat
