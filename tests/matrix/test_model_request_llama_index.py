"""llama-index agents through their real model client: the model's own request decides the catalog.

``FunctionAgent`` runs with llama-index's ``OpenAI`` LLM pointed at the scripted OpenAI-compatible
endpoint (tests/support/scripted_model.py; it streams its chat requests) over the tools of
llama-index-tools-mcp's ``McpToolSpec``: over streamable HTTP with ``BasicMCPClient``, the
documented default (a session per operation, the server process shared), over stdio with one
``ClientSession`` kept open (``BasicMCPClient`` would start a new server process per operation,
so a change would never outlive its call). ``to_tool_list_async`` round-trips each input schema
through a pydantic model (measured below: titles, ``additionalProperties: false``, optional
properties as ``anyOf [type, null]`` with ``default: null``); the tools are fixed in the agent,
so after ``list_changed`` and a re-list (which the framework hook records as the install) the
agent built earlier keeps offering what it converted. ``FunctionAgent`` runs the model and the
tools in workflow steps of their own, so each call is tied to its agent through the model's
answer that asked for it (``mcp_health.agent.tied = true``) and judged on what that agent's model
was offered (``client_source = model_request``, docs/model.md#agents). Collected where
llama-index is installed (with llama-index-llms-openai).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
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
async def _specs(transport: str, *flags: str) -> AsyncIterator[Callable[..., Any]]:
    """A maker of ``McpToolSpec`` s on one fresh ``changing_server.py`` (``flags``: ``edit`` to
    list ``trigger_edit``) for the test's agents (keywords: the spec's options, its filters)."""
    from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

    if transport == "http":
        with http_server(str(CHANGING_SERVER), "http", *flags) as url:
            yield lambda **options: McpToolSpec(client=BasicMCPClient(url + "/mcp"), **options)
        return
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(
        command=SERVER_PYTHON, args=[str(CHANGING_SERVER), "stdio", *flags]
    )
    async with (
        stdio_client(parameters) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield lambda **options: McpToolSpec(client=session, **options)


def _agent(model: ScriptedModel, name: str, tools: list[Any]) -> Any:
    """A ``FunctionAgent`` on llama-index's ``OpenAI`` LLM pointed at ``name``'s endpoint."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai import OpenAI

    llm = OpenAI(model="gpt-4o-mini", api_base=model.base_url(name), api_key="scripted")
    return FunctionAgent(tools=tools, llm=llm)


async def _ask(agent: Any, model: ScriptedModel, name: str, step: tuple[str, Any]) -> None:
    """One run: the model calls ``step``'s tool, reads its result and answers."""
    model.script(name, step)
    assert "done" in str(await agent.run(user_msg="go"))


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
        async with _specs(transport) as specs:
            await _ask(_agent(model, "a", await specs().to_tool_list_async()), model, "a", TICKET)
        await _done()
    # the pydantic round trip: titles, empty property descriptions, no additional properties
    assert offered(model, "a")["create_ticket"] == {
        "name": "create_ticket",
        "description": "Creates a ticket.",
        "parameters": {
            "properties": {"title": {"description": "", "title": "Title", "type": "string"}},
            "required": ["title"],
            "type": "object",
            "additionalProperties": False,
        },
        "strict": False,
    }
    assert judged(verdicts, "create_ticket") == [("healthy", "ok", "model_request", None, True)]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_kept_old_definition_is_stale_though_the_hook_saw_the_relisting(
    transport: str, verdicts: Pipeline, model: ScriptedModel
) -> None:
    """The spec keeps two tools (``allowed_tools``); after ``trigger_edit`` the application
    re-lists (the hook records the new definitions, converged) but the agent built earlier
    keeps offering the old ``create_ticket``: the model request wins over the hook's report,
    and the span says so."""
    with anyio.fail_after(120):
        async with _specs(transport, "edit") as specs:
            spec = specs(allowed_tools=["create_ticket", "trigger_edit"])
            agent = _agent(model, "a", await spec.to_tool_list_async())
            await _ask(agent, model, "a", ("trigger_edit", {}))
            relisted = await spec.to_tool_list_async()
            await _ask(agent, model, "a", TICKET)
        await _done()
    assert relisted[0].metadata.description == "Creates a ticket with a priority."
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
        async with _specs(transport) as specs:
            spec = specs()
            agent = _agent(model, "a", await spec.to_tool_list_async())
            await _ask(agent, model, "a", ("trigger_change", {}))
            relisted = await spec.to_tool_list_async()
            await _ask(agent, model, "a", TICKET)
        await _done()
    assert [t.metadata.name for t in relisted] == [*CATALOG, "added_tool"]
    assert model.of("a")[-1].offered == CATALOG
    assert judged(verdicts, "create_ticket") == [
        ("stale_catalog", "catalog_earlier_catalog_offered", "model_request", "registered", True)
    ]
    assert changes(verdicts, "create_ticket") == [(None, None, True)]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_rebuilt_on_a_new_spec_is_not_stale(
    transport: str, verdicts: Pipeline, model: ScriptedModel
) -> None:
    """An agent ran on the first listing; the server changes on its own; the application
    rebuilds its agent on a new spec, whose model is offered the new definitions. Each call is
    tied to its own agent through the answer that asked for it, so the rebuilt agent's call is
    healthy though the first agent, offered the old catalog, is still remembered."""
    with anyio.fail_after(120):
        async with _specs(transport, "edit") as specs:
            await _ask(_agent(model, "a", await specs().to_tool_list_async()), model, "a", TICKET)
            await specs().client.call_tool("trigger_edit", {})
            rebuilt = _agent(model, "b", await specs().to_tool_list_async())
            await _ask(rebuilt, model, "b", ("create_ticket", {"title": "b"}))
        await _done()
    definition = offered(model, "b")["create_ticket"]
    assert definition["description"] == "Creates a ticket with a priority."
    # an optional property: anyOf [type, null] with default null, as pydantic writes it
    assert definition["parameters"]["properties"]["priority"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "default": None,
        "description": "",
        "title": "Priority",
    }
    assert judged(verdicts, "create_ticket") == [
        ("healthy", "ok", "model_request", None, True),
        ("healthy", "ok", "model_request", None, True),
    ]
    assert changes(verdicts, "create_ticket") == [(None, None, False)] * 2


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_relisted_through_the_same_spec_offers_the_old_schema(
    transport: str, verdicts: Pipeline, model: ScriptedModel
) -> None:
    """``McpToolSpec`` caches each tool's pydantic model by tool name: re-listed through the same
    spec after the server changed, the edited ``create_ticket`` reaches the model with its new
    description and its old parameters. The hook reports the re-listed definitions
    (converged); the model request says the offered schema is not the server's."""
    with anyio.fail_after(120):
        async with _specs(transport, "edit") as specs:
            spec = specs()
            await spec.to_tool_list_async()
            await spec.client.call_tool("trigger_edit", {})
            await _ask(_agent(model, "a", await spec.to_tool_list_async()), model, "a", TICKET)
        await _done()
    definition = offered(model, "a")["create_ticket"]
    assert definition["description"] == "Creates a ticket with a priority."
    assert list(definition["parameters"]["properties"]) == ["title"]
    assert judged(verdicts, "create_ticket") == [
        ("stale_catalog", "catalog_digest_mismatch", "model_request", "registered", True)
    ]
    assert changes(verdicts, "create_ticket") == [(("create_ticket",), ("inputSchema",), False)]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_two_agents_sharing_the_server_are_each_judged_on_their_own_offer(
    transport: str, verdicts: Pipeline, model: ScriptedModel
) -> None:
    """Agent ``old`` keeps the tools converted before ``trigger_edit``, agent ``new`` is built on
    a new spec's; both call ``create_ticket`` (with arguments of their own, so each call claims
    its own agent's answer), ``new`` first (so the last install any hook saw is the current
    one). Each call is tied to its agent: ``new``'s is healthy, ``old``'s is stale, offered
    exactly the earlier catalog."""
    with anyio.fail_after(120):
        async with _specs(transport, "edit") as specs:
            old = _agent(model, "old", await specs().to_tool_list_async())
            await _ask(old, model, "old", ("trigger_edit", {}))
            new = _agent(model, "new", await specs().to_tool_list_async())
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
