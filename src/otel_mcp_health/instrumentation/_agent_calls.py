"""Which agent made a ``tools/call``, and what its model was offered (docs/model.md#agents).

The call-time half of :mod:`._agents`: a call is tied to the agent of its context when that agent
offered the called tool, else to the agent whose model answer asked for it (:mod:`._answers`),
else it is untied and judged against every agent whose offer includes the tool (the first whose
offer does not match the server's latest discovery is the one the span names). The comparison is
made with the server's latest complete discovery, made in any session.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from otel_mcp_health.core.install import install_reason
from otel_mcp_health.core.server import CatalogKey
from otel_mcp_health.instrumentation import _servers, _state
from otel_mcp_health.instrumentation._agents import AGENT, AGENTS, Snapshot
from otel_mcp_health.instrumentation._answers import ANSWERS, arguments_digest
from otel_mcp_health.instrumentation._servers import Discovered

_logger = logging.getLogger(__name__)


def call_attributes(
    state: _state.SessionState, name: str, found: Discovered, arguments: Any = None
) -> dict[str, Any]:
    """:func:`_call_attributes`, or nothing when it fails (the call's other evidence stays).
    Shared and read-only: copy before changing it."""
    try:
        return _call_attributes(state, name, found, arguments)
    except Exception:
        _logger.debug("mcp_health: a call's agent evidence was not taken", exc_info=True)
        return {}


def _call_attributes(
    state: _state.SessionState, name: str, found: Discovered, arguments: Any
) -> dict[str, Any]:
    """The agent evidence of a ``tools/call`` of ``name`` judged on ``found`` (the session's or
    its server's last discovery): tied to this context's agent when it offered the called tool,
    else to the agent whose model answer asked for this call (:mod:`._answers`),
    else the untied rule; nothing when no agent offered the tool."""
    judged = _judged_on(state, found)
    if judged is None:
        return {}
    server, found = judged
    snapshot = AGENT.get()
    # the context's agent (it offered something of the server) owns the call only when it
    # offered the called tool; otherwise the answer tie or the untied rule comes first, and it
    # is the fallback when no agent offered the tool (an application's own, a nested agent's)
    own = (
        snapshot
        if snapshot is not None and AGENTS.current(snapshot) and server in snapshot.offered
        else None
    )
    context = own is not None and name in own.offered[server]
    if len(ANSWERS):
        digest = arguments_digest(arguments)
        if context and snapshot is not None:  # its own pending answer is spent, never lent
            agent = snapshot.agent
            ANSWERS.claim(server, name, digest, lambda o, _s, _t: _same_agent(o, agent))
        else:
            claimed = ANSWERS.claim(server, name, digest, _offers)
            if len({owner.agent for owner in claimed}) > 1:  # not one agent's: judged on each
                worst = _worst(claimed, server, found)
                return worst.attributes(server, found, tied=False) if worst else {}
            snapshot = claimed[0] if claimed else None
            context = snapshot is not None
    if context and snapshot is not None:
        return snapshot.attributes(server, found, tied=True)
    chosen = _worst(AGENTS.offering(server, name), server, found)
    if chosen is not None:
        return chosen.attributes(server, found, tied=False)
    return own.attributes(server, found, tied=True) if own is not None else {}


def _judged_on(
    state: _state.SessionState, found: Discovered
) -> tuple[CatalogKey, Discovered] | None:
    """The call's server and the discovery an offer is compared with: the server's latest
    complete discovery, made in any session, rather than an older one of this session; ``None``
    without a server or tool forms."""
    server = state.server_identity().catalog
    if server is None:
        return None
    latest = _servers.SERVERS.get(server)
    if latest is not None and latest.forms:
        found = latest
    return (server, found) if found.forms else None


def _worst(
    candidates: Iterable[Snapshot], server: CatalogKey, found: Discovered
) -> Snapshot | None:
    """Of ``candidates`` (each offering the called tool of ``server``), the first whose offer
    does not match ``found``, else the first; ``None`` when there is none."""
    chosen: Snapshot | None = None
    for candidate in candidates:
        if install_reason(candidate.check(server, found), found.digest) is not None:
            return candidate
        if chosen is None:
            chosen = candidate
    return chosen


def _offers(owner: Any, server: CatalogKey, tool: str) -> bool:
    """Whether ``owner`` (a pending answer's snapshot) is current and offered ``tool``."""
    return (
        isinstance(owner, Snapshot)
        and AGENTS.current(owner)
        and tool in owner.offered.get(server, ())
    )


def _same_agent(owner: Any, agent: object) -> bool:
    return isinstance(owner, Snapshot) and owner.agent is agent


__all__ = ["call_attributes"]
