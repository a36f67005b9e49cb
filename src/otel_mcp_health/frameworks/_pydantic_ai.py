"""pydantic-ai: the MCP tools an agent's model is offered at each run step.

``MCPToolset`` (``pydantic_ai/mcp.py``) wraps one ``fastmcp.Client``, which owns one
``mcp.ClientSession`` while the toolset is entered: an agent run enters its toolsets, so there is
one session per run (``async with agent:`` holds it across runs). At every step of a run the
agent asks its toolset tree for its tools (``ToolManager.for_run_step`` -> ``get_tools``) and
offers the model what that returns (``ToolManager.tools``): that is the install. ``get_tools``
takes the MCP definitions from ``list_tools``, which caches them by default
(``cache_tools=True``); the toolset's own message handler drops the cache on
``notifications/tools/list_changed``, so the next step lists again and installs the new tools. A
pre-built ``fastmcp.Client`` handed to ``MCPToolset`` gets no such handler: its cache lives until
the session closes, and the agent keeps the old tools. The toolset's default client negotiates
the protocol era (``server/discover`` first): in the 2026-07-28 era a notification comes only on a
``subscriptions/listen`` stream, which the toolset never opens, so there the cache is never
dropped within a session either (measured with 2.68.0 against an mcp 2.x server).

Between an ``MCPToolset`` and the model sit the wrappers the application (or pydantic-ai) puts
around it: ``FilteredToolset`` (``.filtered()``) and ``PreparedToolset`` hide tools,
``PrefixedToolset`` (``.prefixed()``) and ``RenamedToolset`` (``.renamed()``) rename them,
``CombinedToolset`` joins toolsets. So the hook has two points. ``MCPToolset.get_tools`` (with
``list_tools``) notes, for the step, what each MCP toolset listed and which of those tools it
shows the model (``_is_visible_to``), with the session that listed them (the latest application
``tools/list`` inside the call) or, on a cache hit, the toolset's live session
(``toolset.client.session``). ``ToolManager.for_run_step`` then takes the step's final tools and
maps each back to its MCP toolset and MCP name: from the tool's ``toolset`` (the outermost
wrapper that renamed it, or the MCP toolset itself) down the ``wrapped`` chain, undoing each
prefix and rename. The install of each MCP toolset is its listed definitions whose names the
model is offered: a subset under a filter, none when the filter hides all. A step with a toolset
the hook cannot walk (a toolset class of the application's own, which may rename MCP tools its
own way) is one warning and no record rather than a guess. The same install reported once for a
session is not reported again at every step; outside an agent's run step nothing is offered to a
model, so a direct ``get_tools`` records nothing.
"""

from __future__ import annotations

import importlib
import logging
import weakref
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from otel_mcp_health.frameworks._hooks import Framework, in_module
from otel_mcp_health.frameworks._report import (
    appending_to,
    collecting,
    report_install,
    unexpected,
)

_logger = logging.getLogger(__name__)
_FRAMEWORK = "pydantic-ai"


@dataclass(frozen=True, slots=True)
class _Listed:
    """What one ``MCPToolset.get_tools`` of the step listed, and which names it showed."""

    toolset: Any
    definitions: Any
    source: Any
    visible: frozenset[str]


#: The MCP definitions ``list_tools`` returned inside the current ``get_tools``.
_LISTED: ContextVar[list[Any] | None] = ContextVar("otel_mcp_health_pydantic_ai", default=None)
#: The MCP toolsets' listings inside the current ``ToolManager.for_run_step`` (None outside).
_STEP: ContextVar[list[_Listed] | None] = ContextVar("otel_mcp_health_pydantic_step", default=None)
#: Per toolset: the (session, listed definitions, names offered) last reported.
_REPORTED: weakref.WeakKeyDictionary[Any, tuple[Any, Any, frozenset[str]]] = (
    weakref.WeakKeyDictionary()
)
#: A tool mapped back: (its MCP toolset's listing, its MCP name).
_Origin = tuple[_Listed, str]


_list_tools = appending_to(_LISTED)


async def _get_tools(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    def note(tools: Any, listed: list[Any], listing: Any) -> None:
        _note(instance, listed, listing, tools)

    return await collecting(_LISTED, wrapped, args, kwargs, note)


def _note(toolset: Any, listed: list[Any], listing: Any, shown: Any) -> None:
    """Note for the enclosing step what ``toolset`` listed and showed (never raises)."""
    try:
        step = _STEP.get()
        if step is None or not listed:
            return
        source = listing if listing is not None else _live_session(toolset)
        step.append(_Listed(toolset, listed[-1], source, frozenset(shown)))
    except Exception:  # the agent's step must go on whatever happens to our record
        _logger.debug("otel-mcp-health: pydantic-ai listing not noted", exc_info=True)


def _live_session(toolset: Any) -> Any:
    try:
        return toolset.client.session  # a fastmcp.Client raises when not connected
    except Exception:  # noqa: BLE001 - a fastmcp.Client raises when not connected
        return None


async def _for_run_step(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    step: list[_Listed] = []
    token = _STEP.set(step)
    try:
        manager = await wrapped(*args, **kwargs)
    finally:
        _STEP.reset(token)
    if step:
        _report_step(step, getattr(manager, "tools", None))
    return manager


def _report_step(step: list[_Listed], tools: Any) -> None:
    """Report, per MCP toolset of the step, the definitions of the tools the model is offered
    (never raises; an unknown shape is one warning and no record)."""
    try:
        offered = _offered(step, tools)
    except Exception:  # not the toolsets this hook knows
        _logger.debug("otel-mcp-health: pydantic-ai tools not mapped", exc_info=True)
        offered = None
    if offered is None:
        unexpected(_FRAMEWORK, "a run step's tools could not be mapped back to MCP tools")
        return
    for listed in {id(listed.toolset): listed for listed in step}.values():
        names = frozenset(offered.get(id(listed.toolset), ()))
        _report(listed, names)


def _offered(step: list[_Listed], tools: Any) -> dict[int, set[str]] | None:
    """Per MCP toolset (by id), the MCP names of the step's tools that came from it; None when a
    tool's origin cannot be told."""
    toolsets: Any = importlib.import_module("pydantic_ai.toolsets")
    known = {id(listed.toolset): listed for listed in step}
    offered: dict[int, set[str]] = {}
    for name, tool in dict(tools).items():
        origins = _origins(toolsets, tool.toolset, name, known)
        if origins is None or len(origins) > 1:
            return None
        for listed, mcp_name in origins:
            offered.setdefault(id(listed.toolset), set()).add(mcp_name)
    return offered


def _origins(
    toolsets: Any, toolset: Any, name: str, known: dict[int, _Listed]
) -> list[_Origin] | None:
    """Where the tool ``name`` of ``toolset`` comes from: ``[]`` when not from an MCP toolset of
    the step, its MCP toolset's listing and MCP name, or None when ``toolset`` hides MCP toolsets
    in a shape this hook cannot undo."""
    listed = known.get(id(toolset))
    if listed is not None:
        return [(listed, name)] if name in listed.visible else []
    if isinstance(toolset, toolsets.PrefixedToolset):
        head = f"{toolset.prefix}_"
        if not name.startswith(head):
            return []
        return _origins(toolsets, toolset.wrapped, name.removeprefix(head), known)
    if isinstance(toolset, toolsets.RenamedToolset):
        return _origins(toolsets, toolset.wrapped, toolset.name_map.get(name, name), known)
    if isinstance(toolset, toolsets.WrapperToolset):  # filters, prepares, approves: same names
        return _origins(toolsets, toolset.wrapped, name, known)
    if isinstance(toolset, toolsets.CombinedToolset):
        found: list[_Origin] = []
        for child in toolset.toolsets:
            origins = _origins(toolsets, child, name, known)
            if origins is None:
                return None
            found.extend(origins)
        return found
    return [] if _not_mcp(toolsets, toolset) else None


def _not_mcp(toolsets: Any, toolset: Any) -> bool:
    """Whether ``toolset`` is a leaf whose tools are not MCP tools: pydantic-ai's own (function,
    external, output tools). A toolset class of the application's may be anything, an MCP toolset
    renamed its own way included: its tools cannot be told apart."""
    if isinstance(toolset, toolsets.FunctionToolset | toolsets.ExternalToolset):
        return True
    return type(toolset).__module__.partition(".")[0] == "pydantic_ai"


def _report(listed: _Listed, names: frozenset[str]) -> None:
    """One install: ``listed``'s definitions whose names the model is offered (never raises)."""
    try:
        last = _REPORTED.get(listed.toolset)
        if listed.source is None or (
            last is not None
            and last[0] is listed.source
            and last[1] is listed.definitions
            and last[2] == names
        ):
            return
        _REPORTED[listed.toolset] = (listed.source, listed.definitions, names)
        report_install(listed.source, [d for d in listed.definitions if d.name in names])
    except Exception:  # the agent's step must go on whatever happens to our record
        _logger.debug("otel-mcp-health: pydantic-ai install not recorded", exc_info=True)


PYDANTIC_AI = Framework(
    distribution="pydantic-ai-slim",
    supported=">=2.68",
    patches=(
        *in_module(
            "pydantic_ai.mcp",
            {"MCPToolset.get_tools": _get_tools, "MCPToolset.list_tools": _list_tools},
        ),
        *in_module("pydantic_ai.tool_manager", {"ToolManager.for_run_step": _for_run_step}),
    ),
)
