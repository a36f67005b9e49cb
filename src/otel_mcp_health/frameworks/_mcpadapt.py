"""mcpadapt: the tools ``MCPAdapt`` adapts for smolagents, CrewAI and its other adapters.

mcpadapt is the layer under smolagents' ``ToolCollection.from_mcp`` and ``MCPClient``, and under
crewai-tools' ``MCPServerAdapter``. ``MCPAdapt`` opens one ``ClientSession`` per server
(``initialize``, ``tools/list``) for the whole ``with`` block (or ``start()`` .. ``close()``),
on a daemon thread with an event loop of its own (``async with`` runs it on the caller's loop).
It never follows a ``nextCursor`` and has no message handler: a ``list_changed`` reaches no
one, and the tools stay what was listed at connect unless the application calls ``tools()``
again (its documented "get latest tools").

The install step is ``MCPAdapt.tools()`` (sync) and ``MCPAdapt.atools()`` (async): each lists
again in every session ("refresh tools"), stores the lists in ``self.mcp_tools`` beside
``self.sessions`` and converts every tool with the framework's adapter
(``adapter.adapt(partial(_sync_call_tool, session, tool.name), tool)``; smolagents sanitizes the
name and keeps only the input properties, CrewAI rewrites the description). The hook lets the
call finish, then reports each session with the MCP definitions adapted from it: the pairs
``zip(sessions, mcp_tools)`` that the adapters were handed, before any conversion. A call that
raises (an adapter that rejects a definition) reports nothing. A filter applied after ``tools()``
(``MCPServerAdapter(params, *names)``) is not seen here: the crewai-tools hook reports that
install itself, and this one stands aside (:data:`DEFERRED`).
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Any

from otel_mcp_health.frameworks._hooks import Framework, in_module
from otel_mcp_health.frameworks._report import after_await, after_call, report_install

_logger = logging.getLogger(__name__)

#: True while a caller's hook reports what ``MCPAdapt`` adapts itself (it filters afterwards).
DEFERRED: ContextVar[bool] = ContextVar("otel_mcp_health_mcpadapt_deferred", default=False)


def _report(adapt: Any, *_call: Any) -> None:
    """One install per session: the MCP tools ``MCPAdapt`` just adapted from it."""
    if DEFERRED.get():
        return
    try:
        pairs = list(zip(adapt.sessions, adapt.mcp_tools, strict=False))
    except Exception:  # not the MCPAdapt this hook knows: nothing to report
        _logger.debug("otel-mcp-health: mcpadapt install not readable", exc_info=True)
        return
    for session, tools in pairs:
        try:
            report_install(session, list(tools))
        except Exception:
            _logger.debug("otel-mcp-health: mcpadapt install not recorded", exc_info=True)


_tools = after_call(_report)
_atools = after_await(_report)

MCPADAPT = Framework(
    distribution="mcpadapt",
    supported=">=0.1.19",
    patches=in_module("mcpadapt.core", {"MCPAdapt.tools": _tools, "MCPAdapt.atools": _atools}),
)
