"""strands-agents: the MCP tools an ``Agent``'s ``ToolRegistry`` hands its model.

Session pattern: an ``MCPClient`` (``strands/tools/mcp/mcp_client.py``) runs one ``ClientSession``
on a background thread with an event loop of its own, from ``start()`` (or the first
``load_tools``) until ``stop()`` / the last consumer's ``agent.cleanup()``. Passed as a tool
provider (``Agent(tools=[client])``), it starts while the ``Agent`` is built and serves every
invocation of that agent; in the managed pattern (``with client: Agent(tools=
client.list_tools_sync())``) the application owns the same one session.

Where it installs: ``ToolRegistry.process_tools`` (``strands/tools/registry.py``), called from
``Agent.__init__``. Each MCP tool arrives as an ``MCPAgentTool`` (listed by ``load_tools``, every
page, or ``list_tools_sync``, one page; the client's ``prefix`` and ``tool_filters`` applied)
and is registered by its agent-facing name; the model is offered
``registry.get_all_tool_specs()`` at every step. Strands lists once. By default a change reaches
no one (and at the 2026-07-28 era none is even sent: strands opens ``subscriptions/listen`` only
with ``on_tools_changed``). With ``on_tools_changed`` the client re-lists into its own cache
(``_loaded_tools``) and calls back, while the agent's registry keeps the tools it registered.
So the registry is the installed set, and only what changes it is an install.

How the hook maps back: it lets ``process_tools`` finish, then, for every ``MCPClient`` whose
tools the call registered or that it was handed as a tool provider, reports the MCP definitions
of all that client's tools now in the registry (``MCPAgentTool.mcp_tool``, the raw
``mcp.types.Tool`` whatever ``prefix`` renamed it; only what ``tool_filters`` kept, so none when
the filters hide every tool) with the client's session
(``MCPAgentTool.mcp_client._background_thread_session``, private). A call that raises (a 401 at
connect: ``ValueError('Failed to load tool ...')``) reports nothing. Tools registered or
replaced directly (``register_tool``, ``replace``) are not seen, nor is the managed pattern's
empty list (``Agent(tools=client.list_tools_sync())`` when the filters kept nothing names no
client).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from otel_mcp_health.frameworks._hooks import Framework, Patch
from otel_mcp_health.frameworks._report import after_call, report_install, unexpected

_logger = logging.getLogger(__name__)


def _mcp_client(tool: Any) -> Any:
    """The ``MCPClient`` an ``MCPAgentTool`` calls through (None for any other tool)."""
    if getattr(tool, "mcp_tool", None) is None:
        return None
    return getattr(tool, "mcp_client", None)


def _providers(given: Any) -> list[Any]:
    """The ``MCPClient`` s handed to ``process_tools`` as tool providers (nested lists included):
    a client whose filters kept none of its tools registers nothing, yet its install is empty."""
    module = sys.modules.get("strands.tools.mcp.mcp_client")
    client_type = getattr(module, "MCPClient", None)
    if not isinstance(client_type, type):
        return []
    found: list[Any] = []
    pending = [given]
    while pending:
        item = pending.pop()
        if isinstance(item, client_type):
            found.append(item)
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return found


def _report(registry: Any, args: tuple[Any, ...], kwargs: dict[str, Any], names: Any) -> None:
    """One install per client touched: all its MCP definitions now in the registry."""
    try:
        tools = dict(registry.registry)
        touched = {id(c): c for n in names if (c := _mcp_client(tools.get(n))) is not None}
        given = args[0] if args else kwargs.get("tools", ())
        touched.update((id(client), client) for client in _providers(given))
    except Exception:  # not the ToolRegistry this hook knows: nothing to report
        unexpected("strands-agents", "ToolRegistry.process_tools is not of a known shape")
        _logger.debug("otel-mcp-health: strands install not readable", exc_info=True)
        return
    for client in touched.values():
        try:
            installed = [t.mcp_tool for t in tools.values() if _mcp_client(t) is client]
            report_install(getattr(client, "_background_thread_session", None), installed)
        except Exception:
            _logger.debug("otel-mcp-health: strands install not recorded", exc_info=True)


_process_tools = after_call(_report)

STRANDS = Framework(
    distribution="strands-agents",
    supported=">=1.62",
    patches=(
        Patch("strands.tools.registry", "ToolRegistry.process_tools", _process_tools, ("tools",)),
    ),
)
