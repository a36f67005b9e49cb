"""LangChain agents through their real model client: the model's own request decides the catalog.

langgraph's ``create_react_agent`` runs with ``langchain-openai``'s ``ChatOpenAI`` pointed at the
scripted OpenAI-compatible endpoint (tests/support/scripted_model.py), over tools from
langchain-mcp-adapters' ``load_mcp_tools`` on one session kept open (``client.session(name)``,
so the server process that changes is the one every call reaches, stdio included). LangChain
converts each MCP tool once and hands the model its definition unchanged (measured below); the
tools are bound when the graph is built, so after ``list_changed`` and a re-list (which the
framework hook records as the install) the agent built earlier keeps offering what it converted.
langgraph runs the model request in a task of its own, so each call is tied to its agent through
the model's answer that asked for it (``ChatOpenAI`` asks ``with_raw_response`` and parses it;
``mcp_health.agent.tied = true``) and judged on what that agent's model was offered
(``client_source = model_request``, docs/model.md#agents): healthy on the current tools;
``stale_catalog`` on a kept old definition (``catalog_digest_mismatch``) or exactly the old
catalog after a tool was only added (``catalog_earlier_catalog_offered``), the hook's converged
report overruled; not stale once the agent is rebuilt on the re-listed tools; two agents sharing
the server each judged on their own offer. Collected where langchain-openai is installed (the
LangChain cell, mcp 1.x).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from tests.support.framework_cells import calls as framework_calls
from tests.support.matrix_drivers import CHANGING_SERVER, SERVER_PYTHON, http_server
from tests.support.processor_helpers import Pipeline
from tests.support.scripted_model import ScriptedModel, scripted_model

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio

TRANSPORTS = ["stdio", "http"]
CATALOG = ["create_ticket", "fail", "trigger_change"]
EDITABLE = [*CATALOG, "trigger_edit"]
TICKET = ("create_ticket", {"title": "t"})


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with scripted_model() as scripted:
        yield scripted


@asynccontextmanager
async def _session(transport: str, *flags: str) -> Any:
    """One session of langchain-mcp-adapters on a fresh ``changing_server.py`` (``flags``:
    ``edit`` to list ``trigger_edit``), open for the test's agents."""
    from langchain_mcp_adapters.client import MultiServerMCPClient

    if transport == "stdio":
        args = [str(CHANGING_SERVER), "stdio", *flags]
        connection: Any = {"transport": "stdio", "command": SERVER_PYTHON, "args": args}
        async with MultiServerMCPClient({"server": connection}).session("server") as session:
            yield session
        return
    with http_server(str(CHANGING_SERVER), "http", *flags) as url:
        connection = {"transport": "streamable_http", "url": url + "/mcp"}
        async with MultiServerMCPClient({"server": connection}).session("server") as session:
            yield session


async def _tools(session: Any) -> list[Any]:
    """What ``load_mcp_tools`` converts (it lists: the framework hook records the install)."""
    from langchain_mcp_adapters.tools import load_mcp_tools

    return await load_mcp_tools(session)


def _agent(model: ScriptedModel, name: str, tools: list[Any]) -> Any:
    """langgraph's ReAct agent on ``ChatOpenAI`` pointed at ``name``'s scripted endpoint."""
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    llm = ChatOpenAI(model="scripted", base_url=model.base_url(name), api_key="scripted")
    return create_react_agent(llm, tools)


async def _ask(agent: Any, model: ScriptedModel, name: str, step: tuple[str, Any]) -> None:
    """One turn: the model calls ``step``'s tool, reads its result and answers."""
    model.script(name, step)
    await agent.ainvoke({"messages": [("user", "go")]})


def judged(pipeline: Pipeline, tool: str) -> list[tuple[Any, ...]]:
    """``tool``'s calls, in start order: (verdict, reason, catalog source, the source the model
    request overruled, whether the call was tied to its agent)."""
    keys = (A.CATALOG_CLIENT_SOURCE, A.CATALOG_OVERRULED_SOURCE, A.AGENT_TIED)
    return [row[1:] for row in framework_calls(pipeline, *keys) if row[0] == f"tools/call {tool}"]


def changes(pipeline: Pipeline, tool: str) -> list[tuple[Any, ...]]:
    """``tool``'s calls, in start order: what the offered check found changed (tools, members)
    and whether the model was offered exactly an earlier catalog."""
    keys = (A.OFFERED_CHANGED, A.OFFERED_CHANGED_MEMBERS, A.OFFERED_EARLIER_CATALOG)
    return [row[3:] for row in framework_calls(pipeline, *keys) if row[0] == f"tools/call {tool}"]


def offered(model: ScriptedModel, name: str) -> dict[str, Any]:
    """The definitions ``name``'s last request offered, by tool name."""
    last = model.of(name)[-1]
    return {tool: last.offered_tool(tool) for tool in last.offered}


async def _done() -> None:
    assert await anyio.to_thread.run_sync(flush_receipts, 10.0)


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_offered_the_current_tools_is_healthy(
    transport: str, verdicts: Pipeline, model: ScriptedModel
) -> None:
    with anyio.fail_after(120):
        async with _session(transport) as session:
            tools = await _tools(session)
            await _ask(_agent(model, "a", tools), model, "a", TICKET)
            listed = (await session.list_tools()).tools
        await _done()
    # LangChain hands the model each MCP definition unchanged
    mcp = {t.name: t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed}
    assert offered(model, "a") == {
        name: {"name": name, "description": t["description"], "parameters": t["inputSchema"]}
        for name, t in mcp.items()
    }
    assert judged(verdicts, "create_ticket") == [("healthy", "ok", "model_request", None, True)]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_kept_old_definition_is_stale_though_the_hook_saw_the_relisting(
    transport: str, verdicts: Pipeline, model: ScriptedModel
) -> None:
    """The application hands its agent two of the tools; after ``trigger_edit`` it re-lists (the
    hook records the new definitions, converged) but the agent built earlier keeps offering the
    old ``create_ticket``: the model request wins over the hook's report, and the span says so."""
    with anyio.fail_after(120):
        async with _session(transport, "edit") as session:
            chosen = [
                t for t in await _tools(session) if t.name in ("create_ticket", "trigger_edit")
            ]
            agent = _agent(model, "a", chosen)
            await _ask(agent, model, "a", ("trigger_edit", {}))
            relisted = await _tools(session)
            await _ask(agent, model, "a", TICKET)
        await _done()
    assert [t.name for t in relisted] == EDITABLE
    assert offered(model, "a")["create_ticket"]["description"] == "Creates a ticket."
    assert judged(verdicts, "create_ticket") == [
        ("stale_catalog", "catalog_digest_mismatch", "model_request", "registered", True)
    ]
    assert changes(verdicts, "create_ticket") == [
        (("create_ticket",), ("description", "inputSchema"), False)
    ]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_exactly_the_earlier_catalog_is_stale_when_a_tool_was_only_added(
    transport: str, verdicts: Pipeline, model: ScriptedModel
) -> None:
    """``trigger_change`` adds ``added_tool``; the re-listed install holds it, the agent keeps
    offering exactly the three tools of the first listing."""
    with anyio.fail_after(120):
        async with _session(transport) as session:
            agent = _agent(model, "a", await _tools(session))
            await _ask(agent, model, "a", ("trigger_change", {}))
            relisted = await _tools(session)
            await _ask(agent, model, "a", TICKET)
        await _done()
    assert [t.name for t in relisted] == [*CATALOG, "added_tool"]
    assert model.of("a")[-1].offered == CATALOG
    assert judged(verdicts, "create_ticket") == [
        ("stale_catalog", "catalog_earlier_catalog_offered", "model_request", "registered", True)
    ]
    assert changes(verdicts, "create_ticket") == [(None, None, True)]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_rebuilt_on_the_relisted_tools_is_not_stale(
    transport: str, verdicts: Pipeline, model: ScriptedModel
) -> None:
    """An agent ran on the first listing; the server changes on its own; the application re-lists
    and rebuilds its agent, whose model is offered the new definitions. Each call is tied to its
    own agent through the answer that asked for it, so the rebuilt agent's call is healthy though
    the first agent, offered the old catalog, is still remembered."""
    with anyio.fail_after(120):
        async with _session(transport, "edit") as session:
            await _ask(_agent(model, "a", await _tools(session)), model, "a", TICKET)
            await session.call_tool("trigger_edit", {})
            rebuilt = _agent(model, "b", await _tools(session))
            await _ask(rebuilt, model, "b", ("create_ticket", {"title": "b"}))
        await _done()
    definition = offered(model, "b")["create_ticket"]
    assert definition["description"] == "Creates a ticket with a priority."
    assert "priority" in definition["parameters"]["properties"]
    assert judged(verdicts, "create_ticket") == [
        ("healthy", "ok", "model_request", None, True),
        ("healthy", "ok", "model_request", None, True),
    ]
    assert changes(verdicts, "create_ticket") == [(None, None, False)] * 2


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_two_agents_sharing_the_server_are_each_judged_on_their_own_offer(
    transport: str, verdicts: Pipeline, model: ScriptedModel
) -> None:
    """Agent ``old`` keeps the tools converted before ``trigger_edit``, agent ``new`` is built on
    the re-listed ones; both call ``create_ticket`` (with arguments of their own, so each call
    claims its own agent's answer), ``new`` first (so the last install any hook saw is the
    current one). Each call is tied to its agent: ``new``'s is healthy, ``old``'s is stale,
    offered exactly the earlier catalog."""
    with anyio.fail_after(120):
        async with _session(transport, "edit") as session:
            old = _agent(model, "old", await _tools(session))
            await _ask(old, model, "old", ("trigger_edit", {}))
            new = _agent(model, "new", await _tools(session))
            await _ask(new, model, "new", ("create_ticket", {"title": "new"}))
            await _ask(old, model, "old", ("create_ticket", {"title": "old"}))
        await _done()
    assert offered(model, "old")["create_ticket"]["description"] == "Creates a ticket."
    assert offered(model, "new")["create_ticket"]["description"] == (
        "Creates a ticket with a priority."
    )
    assert judged(verdicts, "create_ticket") == [
        ("healthy", "ok", "model_request", None, True),
        ("stale_catalog", "catalog_earlier_catalog_offered", "model_request", "registered", True),
    ]
    assert changes(verdicts, "create_ticket") == [
        (None, None, False),
        (("create_ticket",), ("description", "inputSchema"), True),
    ]
