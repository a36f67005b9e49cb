"""pydantic-ai through its own OpenAI model client: judged on what the model was offered.

``Agent(OpenAIChatModel("scripted", provider=OpenAIProvider(base_url=...)))`` over an
``MCPToolset`` to ``changing_server.py`` (with ``edit``), held open across runs
(``async with agent``). At every step the agent asks its toolsets for their tools (the framework
hook reports the MCP definitions of the names offered) and sends them to the model (the request
the product reads). pydantic-ai adds ``"additionalProperties": false`` to each schema, and
``"strict": true`` when every property is required.

A ``.prepared()`` wrapper may hand the model other definitions than the toolset listed: here one
that freezes the definitions of the first step. The toolset lists again at every step
(``cache_tools=False``) and the hook reports the new MCP definitions while the model is offered
the frozen ones: the model's request wins, and the call says which evidence it overruled.
Collected where pydantic-ai is installed (the cell needs its ``openai`` extra).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest
from tests.support.model_request_cells import (
    ADDED,
    AGENT_TIED,
    DESCRIPTION_AFTER,
    DESCRIPTION_BEFORE,
    FIRST_CATALOG,
    MODEL_REQUEST,
    OVERRULED_SOURCE,
    TICKET_AFTER,
    TICKET_BEFORE,
    changing_http,
    judged,
    last_call,
    receipts,
    stdio_command,
)
from tests.support.processor_helpers import Pipeline
from tests.support.scripted_model import ScriptedModel, scripted_model

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("create_ticket_verified")]

APIS = ["chat", "responses"]
TICKET = ("create_ticket", {"title": "t"})
#: ``create_ticket`` as pydantic-ai offers it: the MCP schema with ``additionalProperties``.
OFFERED_BEFORE = {**TICKET_BEFORE, "additionalProperties": False}
OFFERED_AFTER = {**TICKET_AFTER, "additionalProperties": False}


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with scripted_model() as scripted:
        yield scripted


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(transport, base URL): stdio, or streamable HTTP to a fresh server process."""
    if request.param == "stdio":
        yield "stdio", ""
        return
    with changing_http() as base:
        yield "http", base


#: The HTTP clients a cell's model providers use, closed at its end on its own event loop.
_CLIENTS: list[Any] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while _CLIENTS:
        await _CLIENTS.pop().aclose()


def _toolset(transport: str, url: str, **options: Any) -> Any:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset

    if transport == "stdio":
        command, args = stdio_command()
        return MCPToolset(StdioTransport(command=command, args=args), **options)
    return MCPToolset(url + "/mcp", **options)


def _agent(model: ScriptedModel, name: str, toolset: Any, api: str = "chat") -> Any:
    """An ``Agent`` named ``name`` whose model client talks to the scripted API as ``name``."""
    import httpx2
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    http = httpx2.AsyncClient()
    _CLIENTS.append(http)
    provider = OpenAIProvider(base_url=model.base_url(name), api_key="sk-test", http_client=http)
    kind = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    return Agent(kind("scripted", provider=provider), toolsets=[toolset], name=name)


def _frozen(toolset: Any) -> Any:
    """``toolset.prepared(...)`` that offers, at every step, the definitions of its first step
    (of the tools still listed): the application pinned what its model sees."""
    first: dict[str, Any] = {}

    async def freeze(ctx: Any, definitions: list[Any]) -> list[Any]:
        if not first:
            first.update((d.name, d) for d in definitions)
        return [first[d.name] for d in definitions if d.name in first]

    return toolset.prepared(freeze)


async def _run(model: ScriptedModel, agent: Any, *calls: tuple[str, dict[str, Any]]) -> None:
    """One ``agent.run`` per scripted call (each in a task of its own, as served agents run)."""
    for call in calls:
        model.script(agent.name, call)

        async def once() -> None:
            result = await agent.run("go")
            assert result.output == "done"
            await receipts()

        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                group.start_soon(once)


def _ticket(model: ScriptedModel, agent: str) -> tuple[str, Any]:
    """``create_ticket`` as ``agent``'s latest request offered it (description, schema)."""
    offered = model.of(agent)[-1].offered_tool("create_ticket")
    assert offered is not None
    return offered["description"], offered["parameters"]


# ---- (a) offered the current tools ------------------------------------------------------------
@pytest.mark.parametrize("api", APIS)
async def test_a_model_offered_the_current_tools_is_healthy(
    api: str, server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    agent = _agent(model, "a", _toolset(*server), api)
    async with agent:
        await _run(model, agent, TICKET)
    assert model.of("a")[0].offered == FIRST_CATALOG
    assert _ticket(model, "a") == (DESCRIPTION_BEFORE, OFFERED_BEFORE)
    assert model.of("a")[0].offered_tool("create_ticket")["strict"] is True  # type: ignore[index]
    assert judged(verdicts, "create_ticket") == [("healthy", "ok", MODEL_REQUEST)]
    call = last_call(verdicts, "create_ticket")
    assert OVERRULED_SOURCE not in call
    # the call ran in the context of the request that offered it: tied to that agent
    assert call[AGENT_TIED] is True


# ---- (b) the old catalog after the server changed -----------------------------------------------
async def test_a_cached_old_definition_is_stale(
    server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    """The default toolset caches its list and never hears the change (2026-07-28 era); the
    application lists again through the toolset's client. The model is offered exactly the
    earlier catalog (its own reason) where the hook's old install reads ``digest_mismatch``:
    the request's reason wins, and the span says it overruled the hook."""
    toolset = _toolset(*server)
    agent = _agent(model, "a", toolset)
    async with agent:
        await _run(model, agent, ("trigger_edit", {}))
        relisted = await toolset.client.list_tools()
        assert {t.name: t.description for t in relisted}["create_ticket"] == DESCRIPTION_AFTER
        await _run(model, agent, TICKET)
    assert _ticket(model, "a") == (DESCRIPTION_BEFORE, OFFERED_BEFORE)
    assert judged(verdicts, "create_ticket") == [
        ("stale_catalog", "catalog_earlier_catalog_offered", MODEL_REQUEST)
    ]
    assert last_call(verdicts, "create_ticket")[OVERRULED_SOURCE] == "registered"


@pytest.mark.parametrize("allowed", [False, True], ids=["every-tool", "filtered"])
async def test_frozen_definitions_are_stale_where_the_hook_reports_the_new_ones(
    allowed: bool, server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    """``.prepared()`` freezes the first step's definitions; the toolset lists the edited
    ``create_ticket`` and the hook reports it (converged), the model is offered the old one:
    exactly the earlier catalog, or under ``.filtered()`` the old definition of one tool."""
    toolset = _toolset(*server, cache_tools=False)
    if allowed:
        toolset = toolset.filtered(lambda ctx, tool: tool.name in {"create_ticket", "trigger_edit"})
    agent = _agent(model, "a", _frozen(toolset))
    async with agent:
        await _run(model, agent, ("trigger_edit", {}), TICKET)
    assert _ticket(model, "a") == (DESCRIPTION_BEFORE, OFFERED_BEFORE)
    reason = "catalog_digest_mismatch" if allowed else "catalog_earlier_catalog_offered"
    assert judged(verdicts, "create_ticket") == [("stale_catalog", reason, MODEL_REQUEST)]
    assert last_call(verdicts, "create_ticket")[OVERRULED_SOURCE] == "registered"


async def test_exactly_the_earlier_catalog_is_stale_and_overrules_the_hook(
    server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    """``trigger_change`` only adds ``added_tool``; the frozen step offers exactly the first
    catalog. The hook's install (the listed definitions of the names offered) is a subset of the
    new listing, which it alone reads as converged."""
    toolset = _toolset(*server, cache_tools=False)
    agent = _agent(model, "a", _frozen(toolset))
    async with agent:
        await _run(model, agent, ("trigger_change", {}), TICKET)
    assert model.of("a")[-1].offered == FIRST_CATALOG
    assert judged(verdicts, "create_ticket") == [
        ("stale_catalog", "catalog_earlier_catalog_offered", MODEL_REQUEST)
    ]
    assert last_call(verdicts, "create_ticket")[OVERRULED_SOURCE] == "registered"


# ---- (c) a toolset that lists at every step: the new tools -------------------------------------
@pytest.mark.parametrize("trigger", ["trigger_edit", "trigger_change"])
async def test_a_toolset_that_lists_at_every_step_is_not_stale(
    trigger: str, server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    agent = _agent(model, "a", _toolset(*server, cache_tools=False))
    async with agent:
        await _run(model, agent, (trigger, {}), TICKET)
    if trigger == "trigger_edit":
        assert _ticket(model, "a") == (DESCRIPTION_AFTER, OFFERED_AFTER)
    else:
        assert model.of("a")[-1].offered == [*FIRST_CATALOG, ADDED]
    assert judged(verdicts, "create_ticket") == [("healthy", "ok", MODEL_REQUEST)]


# ---- (d) two agents, one toolset ---------------------------------------------------------------
async def test_two_agents_sharing_a_toolset_each_get_their_own_verdict(
    server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    """One ``MCPToolset`` (one session) serves agent ``new`` as it lists, and agent ``old``
    through a frozen ``.prepared()`` wrapper. ``new`` offering the current catalog must not turn
    ``old`` green, whatever order they call in."""
    shared = _toolset(*server, cache_tools=False)
    old, new = _agent(model, "old", _frozen(shared)), _agent(model, "new", shared)
    async with old, new:
        await _run(model, old, ("trigger_edit", {}))
        for agent in (new, old, new, old):
            await _run(model, agent, TICKET)
    assert _ticket(model, "old") == (DESCRIPTION_BEFORE, OFFERED_BEFORE)
    assert _ticket(model, "new") == (DESCRIPTION_AFTER, OFFERED_AFTER)
    healthy = ("healthy", "ok", MODEL_REQUEST)
    stale = ("stale_catalog", "catalog_earlier_catalog_offered", MODEL_REQUEST)
    assert judged(verdicts, "create_ticket") == [healthy, stale, healthy, stale]
