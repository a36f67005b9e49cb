"""Attacks on the mapping of offered tools (issue 37 red team)."""

from __future__ import annotations

from otel_mcp_health.core.offered import OfferedTool, ToolIndex, tool_form
from otel_mcp_health.instrumentation._servers import KEPT_DISCOVERIES

_SCHEMA = {"type": "object", "properties": {"title": {"type": "string"}}}


def _ticket(version: int) -> dict[str, object]:
    return {"description": f"Create a ticket (catalog version {version}).", "inputSchema": _SCHEMA}


def test_a_prefixed_definition_older_than_the_retained_discoveries_still_maps() -> None:
    """semantic-kernel (``plugin-create_ticket``) keeps offering the definition of the first
    discovery; the server changed ``create_ticket`` more times than the registry retains (a
    server whose description carries a version or a date). The offered name ends in an MCP
    tool's name after a separator, and no retained discovery carries its definition: it is
    read as the application's own, the request records nothing, and a framework without a hook
    falls back to the discovery result (the latest catalog assumed installed: converged)."""
    retained = [{"create_ticket": tool_form(_ticket(v))} for v in range(2, 2 + KEPT_DISCOVERIES)]
    index = ToolIndex({"server": retained})
    first = _ticket(1)
    offered = OfferedTool("tickets-create_ticket", str(first["description"]), _SCHEMA)
    assert "create_ticket" in index.map([offered]).get("server", {})
