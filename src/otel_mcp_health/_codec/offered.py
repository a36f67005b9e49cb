"""Evidence of what an agent's model was offered, on a ``tools/call`` span (docs/model.md#agents).

The instrumentation compares, in memory, the tools a model request offered with the call's
server's retained discoveries; the span gets the agent's label, whether the call was tied to it
and that comparison: counts, a digest and capped tool and member names, never a definition.
"""

from __future__ import annotations

from typing import Any

from otel_mcp_health import attributes as A
from otel_mcp_health._codec._read import Attributes, read_bool, read_int, read_names, read_str
from otel_mcp_health.core.bounds import cap, cap_names
from otel_mcp_health.core.evidence import InstallCheck


def encode_offered(label: str, *, tied: bool, check: InstallCheck) -> dict[str, Any]:
    """The agent (its bounded label, whether the call was tied to it) and its offered check."""
    attrs: dict[str, Any] = {
        A.AGENT_LABEL: cap(label),
        A.AGENT_TIED: tied,
        A.OFFERED_TOOL_COUNT: check.installed,
        A.OFFERED_DISCOVERED_TOOL_COUNT: check.discovered,
        A.OFFERED_EARLIER_CATALOG: check.earlier_catalog,
    }
    if check.discovery_digest is not None:
        attrs[A.OFFERED_DISCOVERY_DIGEST] = check.discovery_digest
    if check.changed:
        attrs[A.OFFERED_CHANGED] = cap_names(check.changed)
    if check.unlisted:
        attrs[A.OFFERED_UNLISTED] = cap_names(check.unlisted)
    if check.changed_members:
        attrs[A.OFFERED_CHANGED_MEMBERS] = cap_names(check.changed_members)
    return attrs


def decode_offered(attrs: Attributes) -> InstallCheck | None:
    """The offered check a call span carries, or ``None`` when no agent's request was used."""
    discovered = read_int(attrs, A.OFFERED_DISCOVERED_TOOL_COUNT)
    if discovered is None:
        return None
    return InstallCheck(
        installed=read_int(attrs, A.OFFERED_TOOL_COUNT) or 0,
        discovered=discovered,
        changed=read_names(attrs, A.OFFERED_CHANGED),
        unlisted=read_names(attrs, A.OFFERED_UNLISTED),
        discovery_digest=read_str(attrs, A.OFFERED_DISCOVERY_DIGEST),
        changed_members=read_names(attrs, A.OFFERED_CHANGED_MEMBERS),
        earlier_catalog=read_bool(attrs, A.OFFERED_EARLIER_CATALOG) is True,
    )


__all__ = ["decode_offered", "encode_offered"]
