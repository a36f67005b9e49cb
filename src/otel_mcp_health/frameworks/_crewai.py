"""crewai-tools: the subset of an ``MCPServerAdapter``'s tools that its agent is offered.

``MCPServerAdapter(params, *names)`` (``crewai_tools/adapters/mcp_adapter.py``) starts
``MCPAdapt`` in its ``__init__`` (``start()`` -> ``MCPAdapt.__enter__`` -> ``tools()``, the
mcpadapt hook's install point) and then filters by name in its ``tools`` property: the agent
holds only the tools named (``ToolCollection.filter_by_names``, sanitized and case-insensitive).
Without names every adapted tool is offered and the mcpadapt hook's install is the right one.

With names, this hook wraps ``start()``: the mcpadapt hook stands aside inside it
(:data:`otel_mcp_health.frameworks._mcpadapt.DEFERRED`), and once ``start()`` returned the
install of each session is its MCP definitions whose names the adapter's ``tools`` offer (CrewAI's
adapter names each tool by its MCP name), none when no name matched. An adapter of a shape the
hook does not know is one warning and no record.
"""

from __future__ import annotations

import logging
from typing import Any

from otel_mcp_health.frameworks import _mcpadapt
from otel_mcp_health.frameworks._hooks import Framework, Patch
from otel_mcp_health.frameworks._report import report_install, unexpected

_logger = logging.getLogger(__name__)


def _start(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if not getattr(instance, "_tool_names", None):
        return wrapped(*args, **kwargs)
    token = _mcpadapt.DEFERRED.set(True)
    try:
        result = wrapped(*args, **kwargs)
    finally:
        _mcpadapt.DEFERRED.reset(token)
    _report(instance)
    return result


def _report(adapter: Any) -> None:
    """One install per session: the MCP definitions of the tools the adapter offers."""
    try:
        offered = {tool.name for tool in adapter.tools}
        adapt = adapter._adapter  # noqa: SLF001 - the MCPAdapt the adapter started
        pairs = list(zip(adapt.sessions, adapt.mcp_tools, strict=False))
    except Exception:  # not the MCPServerAdapter this hook knows
        _logger.debug("otel-mcp-health: crewai-tools install not readable", exc_info=True)
        unexpected("crewai-tools", "MCPServerAdapter is not of a known shape")
        return
    for session, tools in pairs:
        try:
            report_install(session, [tool for tool in tools if tool.name in offered])
        except Exception:
            _logger.debug("otel-mcp-health: crewai-tools install not recorded", exc_info=True)


CREWAI_TOOLS = Framework(
    distribution="crewai-tools",
    supported=">=1.15",
    patches=(Patch("crewai_tools.adapters.mcp_adapter", "MCPServerAdapter.start", _start),),
)
