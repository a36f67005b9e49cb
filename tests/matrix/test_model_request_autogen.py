"""autogen's ``AssistantAgent`` over its MCP tools, through its real OpenAI model client
(``OpenAIChatCompletionClient``) pointed at the scripted API.

autogen has no hook of ours: the only evidence of what the agent installed is the model's own
request (``client_source = model_request``). How the framework behaves (measured, autogen-ext
0.7.5 on mcp 1.x; its MCP module does not import on mcp 2.x):

- ``mcp_server_tools(params, session=...)`` lists once and wraps each tool in an adapter that
  keeps the definition it was built from; nothing re-lists on ``list_changed``. An application
  that lists again (here: ``mcp_server_tools`` once more, for a new agent) does not change what
  the existing agent offers: it keeps the old definitions, or exactly the old catalog.
- ``McpWorkbench`` lists the tools before every model request: the agent offers the server's
  current catalog after a change.

Without ``session=`` every adapter call opens a fresh session (the documented default); over
stdio that is a fresh server process, so the changing cells share one session there. Every cell
runs over stdio and streamable HTTP and asserts the verdict of each call and what each model
request offered. Collected where autogen-ext is installed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import pytest
from tests.support.framework_cells import calls
from tests.support.matrix_drivers import CHANGING_SERVER, SERVER_PYTHON, http_server
from tests.support.processor_helpers import Pipeline
from tests.support.scripted_model import ScriptedModel, scripted_model

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("create_ticket_verified")]

TRANSPORTS = ["stdio", "http"]
FIRST = ["create_ticket", "fail", "trigger_change", "trigger_edit"]
HEALTHY = ("tools/call create_ticket", "healthy", "ok")
KEPT_DEFINITION = ("tools/call create_ticket", "stale_catalog", "catalog_digest_mismatch")
KEPT_CATALOG = ("tools/call create_ticket", "stale_catalog", "catalog_earlier_catalog_offered")
OLD, NEW = "Creates a ticket.", "Creates a ticket with a priority."


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with scripted_model() as scripted:
        yield scripted


@pytest.fixture
def edit_url() -> Iterator[str]:
    """A fresh ``changing_server.py`` that also lists ``trigger_edit`` (streamable HTTP)."""
    with http_server(str(CHANGING_SERVER), "http", "edit") as url:
        yield url


def _params(transport: str, url: str) -> Any:
    from autogen_ext.tools.mcp import StdioServerParams, StreamableHttpServerParams

    if transport == "stdio":
        args = [str(CHANGING_SERVER), "stdio", "edit"]
        return StdioServerParams(command=SERVER_PYTHON, args=args)
    return StreamableHttpServerParams(url=url + "/mcp")


@asynccontextmanager
async def _session(params: Any) -> AsyncIterator[Any]:
    """One session the adapters share (``create_mcp_server_session``, as autogen documents)."""
    from autogen_ext.tools.mcp import create_mcp_server_session

    async with create_mcp_server_session(params) as session:
        await session.initialize()
        yield session


@pytest.fixture
async def agents(model: ScriptedModel) -> AsyncIterator[Callable[..., Any]]:
    """Makes an ``AssistantAgent`` on the real OpenAI client, its base URL the scripted API
    (``tools``: ``tools=`` adapters or a ``workbench=``); closes the clients on this loop."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    opened: list[Any] = []

    def make(name: str, **tools: Any) -> Any:
        client = OpenAIChatCompletionClient(
            model="gpt-4o", api_key="sk-test-not-used", base_url=model.base_url(name)
        )
        opened.append(client)
        return AssistantAgent(name, model_client=client, **tools)

    yield make
    for client in opened:
        await client.close()


async def _turn(model: ScriptedModel, agent: Any, tool: str, **arguments: Any) -> None:
    """One ``run``: the model calls ``tool`` (the agent returns its result, no second request);
    the call's outcome receipts are awaited before the next turn lists or calls anything."""
    from autogen_agentchat.messages import ToolCallSummaryMessage

    model.script(agent.name, (tool, arguments))
    with anyio.fail_after(60):
        result = await agent.run(task="go")
    assert isinstance(result.messages[-1], ToolCallSummaryMessage), result.messages[-1]
    assert await anyio.to_thread.run_sync(flush_receipts, 10.0)


def _ticket(model: ScriptedModel, agent: str) -> dict[str, Any]:
    """The ``create_ticket`` definition the last request of ``agent`` offered."""
    definition = model.of(agent)[-1].offered_tool("create_ticket")
    assert definition is not None
    return definition


def _offered(model: ScriptedModel, agent: str) -> list[list[str]]:
    return [r.offered for r in model.of(agent)]


def _sources(verdicts: Pipeline) -> set[Any]:
    spans = [s for s in verdicts.spans() if s.name.startswith("tools/call ")]
    return {(s.attributes or {}).get(A.CATALOG_CLIENT_SOURCE) for s in spans}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_adapters_offered_the_current_tools_are_healthy(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    from autogen_ext.tools.mcp import mcp_server_tools

    params = _params(transport, edit_url)
    async with _session(params) as session:
        a = agents("a", tools=await mcp_server_tools(params, session=session))
        await _turn(model, a, "create_ticket", title="t")
    assert _offered(model, "a") == [FIRST]
    assert calls(verdicts) == [HEALTHY]
    assert _sources(verdicts) == {"model_request"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_workbench_offered_the_current_tools_is_healthy(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    from autogen_ext.tools.mcp import McpWorkbench

    async with McpWorkbench(_params(transport, edit_url)) as workbench:
        a = agents("a", workbench=workbench)
        await _turn(model, a, "create_ticket", title="t")
    assert _offered(model, "a") == [FIRST]
    assert calls(verdicts) == [HEALTHY]
    assert _sources(verdicts) == {"model_request"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_adapters_keeping_the_old_definition_after_a_re_listing_are_stale(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    """``trigger_edit`` changes ``create_ticket``; the application lists again, the agent keeps
    the adapters it was built with: its next request offers the old definition. The agent has
    two of the server's tools, so what it offers is no earlier catalog, only an old definition."""
    from autogen_ext.tools.mcp import mcp_server_tools

    params = _params(transport, edit_url)
    async with _session(params) as session:
        tools = await mcp_server_tools(params, session=session)
        chosen = [tool for tool in tools if tool.name in ("create_ticket", "trigger_edit")]
        a = agents("a", tools=chosen)
        await _turn(model, a, "trigger_edit")
        await mcp_server_tools(params, session=session)  # listed again, handed to no agent
        await _turn(model, a, "create_ticket", title="t")
    assert _offered(model, "a") == [["create_ticket", "trigger_edit"]] * 2
    assert _ticket(model, "a")["description"] == OLD
    assert calls(verdicts)[-1] == KEPT_DEFINITION
    assert _sources(verdicts) == {"model_request"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_adapters_keeping_the_whole_old_catalog_after_an_edit_offer_an_earlier_catalog(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    """The same edit with every tool of the server: the agent offers exactly the first catalog,
    which reads as the earlier catalog (its own reason) rather than as one changed definition."""
    from autogen_ext.tools.mcp import mcp_server_tools

    params = _params(transport, edit_url)
    async with _session(params) as session:
        a = agents("a", tools=await mcp_server_tools(params, session=session))
        await _turn(model, a, "trigger_edit")
        await mcp_server_tools(params, session=session)
        await _turn(model, a, "create_ticket", title="t")
    assert _offered(model, "a") == [FIRST, FIRST]
    assert _ticket(model, "a")["description"] == OLD
    assert calls(verdicts)[-1] == KEPT_CATALOG
    assert _sources(verdicts) == {"model_request"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_adapters_keeping_exactly_the_old_catalog_after_a_tool_was_added_are_stale(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    """``trigger_change`` only adds ``added_tool``; the application lists it, the agent keeps
    offering exactly the first catalog (a subset of the new one, yet an earlier catalog)."""
    from autogen_ext.tools.mcp import mcp_server_tools

    params = _params(transport, edit_url)
    async with _session(params) as session:
        a = agents("a", tools=await mcp_server_tools(params, session=session))
        await _turn(model, a, "trigger_change")
        relisted = await mcp_server_tools(params, session=session)
        assert "added_tool" in {tool.name for tool in relisted}
        await _turn(model, a, "create_ticket", title="t")
    assert _offered(model, "a") == [FIRST, FIRST]
    assert calls(verdicts)[-1] == KEPT_CATALOG
    assert _sources(verdicts) == {"model_request"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_workbench_re_lists_and_offers_the_new_tools_and_is_not_stale(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    from autogen_ext.tools.mcp import McpWorkbench

    async with McpWorkbench(_params(transport, edit_url)) as workbench:
        a = agents("a", workbench=workbench)
        await _turn(model, a, "trigger_edit")
        await _turn(model, a, "trigger_change")
        await _turn(model, a, "create_ticket", title="t")
    assert _offered(model, "a")[-1] == [*FIRST, "added_tool"]
    assert _ticket(model, "a")["description"] == NEW
    assert calls(verdicts)[-1] == HEALTHY
    assert _sources(verdicts) == {"model_request"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_agent_built_on_the_new_listing_is_not_stale(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    from autogen_ext.tools.mcp import mcp_server_tools

    params = _params(transport, edit_url)
    async with _session(params) as session:
        first = agents("first", tools=await mcp_server_tools(params, session=session))
        await _turn(model, first, "trigger_edit")
        a = agents("a", tools=await mcp_server_tools(params, session=session))
        await _turn(model, a, "create_ticket", title="t")
    assert _ticket(model, "a")["description"] == NEW
    assert calls(verdicts)[-1] == HEALTHY
    assert _sources(verdicts) == {"model_request"}


async def _two_agents(
    model: ScriptedModel, agents: Callable[..., Any], params: Any, session: Any | None
) -> None:
    """``old`` is built before ``trigger_edit`` and keeps the old catalog, ``new`` on the
    listing after it; they then call ``create_ticket`` at once, each in its own task."""
    from autogen_ext.tools.mcp import mcp_server_tools

    old = agents("old", tools=await mcp_server_tools(params, session=session))
    await _turn(model, old, "trigger_edit")
    new = agents("new", tools=await mcp_server_tools(params, session=session))
    async with anyio.create_task_group() as group:
        group.start_soon(partial(_turn, model, old, "create_ticket", title="t"))
        group.start_soon(partial(_turn, model, new, "create_ticket", title="t"))
    assert _ticket(model, "old")["description"] == OLD
    assert _ticket(model, "new")["description"] == NEW


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_two_agents_sharing_one_session_each_get_their_own_verdict(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    params = _params(transport, edit_url)
    async with _session(params) as session:
        await _two_agents(model, agents, params, session)
    assert sorted(calls(verdicts)[-2:]) == [HEALTHY, KEPT_CATALOG]
    assert _sources(verdicts) == {"model_request"}


async def test_two_agents_with_a_fresh_session_per_call_each_get_their_own_verdict(
    verdicts: Pipeline, model: ScriptedModel, agents: Callable[..., Any], edit_url: str
) -> None:
    """autogen's default (no ``session=``): every listing and every call opens its own session
    to the one HTTP server, so no call's session installed anything; each call is judged by the
    request of the agent whose task made it."""
    await _two_agents(model, agents, _params("http", edit_url), None)
    assert sorted(calls(verdicts)[-2:]) == [HEALTHY, KEPT_CATALOG]
    assert _sources(verdicts) == {"model_request"}
