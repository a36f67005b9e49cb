"""haystack's ``Agent`` over mcp-haystack's ``MCPToolset``, judged on what its model was offered.

The agent runs for real: ``MCPToolset(server_info=...)`` opens one session at ``warm_up`` and lists
the server once (it never lists again, and ignores ``notifications/tools/list_changed``); the
``Agent`` hands the toolset's ``Tool``s to an ``OpenAIChatGenerator``, whose ``openai`` client sends
them, unchanged, to the scripted Chat Completions endpoint (``tests/support/scripted_model.py``).
That request is the only evidence of what the model was offered: haystack has no hook, so every
call here is judged on the model's own request (``client_source = model_request``).

An application picks up a changed catalog the only way haystack offers: it builds a fresh
``MCPToolset`` (a new session, listed at ``warm_up``). Over stdio that spawns a fresh server
process, so the scenarios about a changed catalog run over streamable HTTP, where every session
reaches the same server (``changing_server.py http edit``). There the catalog changes under the
agent through another session (the application's own toolset calls the trigger), and the server
announces it on that session only: the agent's session hears nothing, and its calls are judged on
what its model was offered against the server's latest listing. Over stdio the ``list_changed``
on the agent's own session is the news of the change. The agent's MCP calls run on mcp-haystack's
background event loop, scheduled from the agent's thread: the caller's context goes with them
(``asyncio.run_coroutine_threadsafe``), so each call is tied to the request that offered its tool.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tests.support.framework_cells import calls, in_thread, tool_calls
from tests.support.matrix_drivers import CHANGING_SERVER, SERVER_PYTHON, http_server
from tests.support.processor_helpers import Pipeline
from tests.support.scripted_model import ScriptedModel, scripted_model

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("create_ticket_verified")]

TRANSPORTS = ["stdio", "http"]
#: What the edit-capable changing server lists before any change.
FIRST = ["create_ticket", "fail", "trigger_change", "trigger_edit"]
#: The span attribute naming the agent a call was judged against.
AGENT_LABEL = "mcp_health.agent.label"
TICKET = ("create_ticket", {"title": "t"})


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No usage telemetry from haystack."""
    monkeypatch.setenv("HAYSTACK_TELEMETRY_ENABLED", "False")


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with scripted_model() as scripted:
        yield scripted


@pytest.fixture
def edit_url() -> Iterator[str]:
    """A fresh ``changing_server.py`` over streamable HTTP that also lists ``trigger_edit``."""
    with http_server(str(CHANGING_SERVER), "http", "edit") as url:
        yield url


def _server_info(transport: str, request: pytest.FixtureRequest) -> Any:
    from haystack_integrations.tools.mcp import StdioServerInfo, StreamableHttpServerInfo

    if transport == "stdio":
        return StdioServerInfo(command=SERVER_PYTHON, args=[str(CHANGING_SERVER), "stdio", "edit"])
    url: str = request.getfixturevalue("edit_url")
    return StreamableHttpServerInfo(url=url + "/mcp")


def _toolset(info: Any, **options: Any) -> Any:
    """A connected ``MCPToolset`` (``warm_up`` opens the session and lists the server)."""
    from haystack_integrations.tools.mcp import MCPToolset

    toolset = MCPToolset(server_info=info, **options)
    toolset.warm_up()
    return toolset


def _agent(model: ScriptedModel, name: str, tools: Any) -> Any:
    """An ``Agent`` whose ``OpenAIChatGenerator`` talks to the scripted endpoint as ``name``."""
    from haystack.components.agents import Agent
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    generator = OpenAIChatGenerator(
        api_key=Secret.from_token("sk-test-not-used"),
        model="gpt-4o-mini",
        api_base_url=model.base_url(name),
    )
    agent = Agent(chat_generator=generator, tools=tools)
    agent.warm_up()
    return agent


async def _run(model: ScriptedModel, name: str, agent: Any, *steps: tuple[str, Any]) -> None:
    """One ``Agent.run`` (in a worker thread, as haystack's synchronous API runs) in which the
    model calls ``steps`` in turn, then answers ``done``; then every outcome receipt is in."""
    from haystack.dataclasses import ChatMessage

    model.script(name, *steps)
    result = await in_thread(lambda: agent.run(messages=[ChatMessage.from_user("go")]))
    assert result["messages"][-1].text == "done"
    assert await anyio.to_thread.run_sync(flush_receipts, 10.0)


def _close(*toolsets: Any) -> None:
    for toolset in toolsets:
        toolset.close()


def _judged(pipeline: Pipeline, tool: str = "create_ticket") -> list[tuple[Any, ...]]:
    """Each call of ``tool``, in start order: (verdict, reason, client source, agent label)."""
    rows = []
    for span in tool_calls(pipeline):
        a = span.attributes or {}
        if span.name == f"tools/call {tool}":
            rows.append(
                (
                    a.get(A.VERDICT),
                    a.get(A.REASON),
                    a.get(A.CATALOG_CLIENT_SOURCE),
                    a.get(AGENT_LABEL),
                )
            )
    return rows


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_offered_the_current_tools_is_healthy(
    transport: str, verdicts: Pipeline, model: ScriptedModel, request: pytest.FixtureRequest
) -> None:
    toolset = _toolset(_server_info(transport, request))
    try:
        await _run(model, "a", _agent(model, "a", toolset), TICKET)
    finally:
        _close(toolset)
    # the model was offered the MCP definitions as listed, under their own names
    first = model.of("a")[0]
    assert first.offered == FIRST
    assert first.offered_tool("create_ticket") == {
        "name": "create_ticket",
        "description": "Creates a ticket.",
        "parameters": {
            "type": "object",
            "properties": {"title": {"type": "string"}},
            "required": ["title"],
        },
    }
    assert calls(verdicts) == [("tools/call create_ticket", "healthy", "ok")]
    [(*_, source, label)] = _judged(verdicts)
    assert source == "model_request"
    assert str(label).startswith("openai.chat/")


async def _change(info: Any, tool: str) -> Any:
    """The server's catalog changes under the agent: another session (the application's own
    toolset) calls ``tool``; the server announces it to that session, not to the agent's.
    Then the application lists again through a fresh toolset, returned (open)."""
    admin = _toolset(info, tool_names=[tool])
    try:
        await in_thread(admin.tools[0].invoke)
    finally:
        _close(admin)
    return _toolset(info)


async def test_keeping_the_old_definition_after_a_re_listing_is_stale(
    verdicts: Pipeline, model: ScriptedModel, request: pytest.FixtureRequest
) -> None:
    """The server edits ``create_ticket``; the application lists it again, but the agent keeps
    its toolset (``tool_names``: two of the tools): its model is offered the old definition."""
    info = _server_info("http", request)
    old = _toolset(info, tool_names=["create_ticket", "fail"])
    try:
        fresh = await _change(info, "trigger_edit")
        try:
            edited = next(t for t in fresh.tools if t.name == "create_ticket")
            assert edited.description == "Creates a ticket with a priority."
            await _run(model, "a", _agent(model, "a", old), TICKET)
        finally:
            _close(fresh)
    finally:
        _close(old)
    last = model.of("a")[-1]
    assert last.offered == ["create_ticket", "fail"]
    assert (last.offered_tool("create_ticket") or {})["description"] == "Creates a ticket."
    assert _judged(verdicts)[-1][:3] == (
        "stale_catalog",
        "catalog_digest_mismatch",
        "model_request",
    )


@pytest.mark.parametrize("change", ["trigger_edit", "trigger_change"])
async def test_offered_exactly_the_earlier_catalog_is_stale(
    change: str, verdicts: Pipeline, model: ScriptedModel, request: pytest.FixtureRequest
) -> None:
    """The server edits ``create_ticket`` or only adds ``added_tool``; the re-listing has the
    change, the agent's model is offered exactly the catalog of the first listing (after an
    added tool, a subset of the new one, yet the old catalog)."""
    info = _server_info("http", request)
    old = _toolset(info)
    try:
        fresh = await _change(info, change)
        try:
            assert len(fresh.tools) == len(FIRST) + (change == "trigger_change")
            await _run(model, "a", _agent(model, "a", old), TICKET)
        finally:
            _close(fresh)
    finally:
        _close(old)
    assert model.of("a")[-1].offered == FIRST
    assert _judged(verdicts)[-1][:3] == (
        "stale_catalog",
        "catalog_earlier_catalog_offered",
        "model_request",
    )


async def test_an_agent_rebuilt_on_the_re_listing_is_not_stale(
    verdicts: Pipeline, model: ScriptedModel, request: pytest.FixtureRequest
) -> None:
    """After the edit the application builds a fresh toolset and a fresh agent on it: the model
    is offered the edited definition and ``added_tool``, and the call is judged healthy."""
    info = _server_info("http", request)
    old = _toolset(info)
    try:
        agent = _agent(model, "a", old)
        await _run(model, "a", agent, ("trigger_edit", {}))
        await _run(model, "a", agent, ("trigger_change", {}))
    finally:
        _close(old)
    fresh = _toolset(info)
    try:
        await _run(model, "b", _agent(model, "b", fresh), TICKET)
    finally:
        _close(fresh)
    offered = model.of("b")[0]
    assert offered.offered == [*FIRST, "added_tool"]
    assert (offered.offered_tool("create_ticket") or {})["parameters"]["properties"] == {
        "title": {"type": "string"},
        "priority": {"type": "string"},
    }
    assert _judged(verdicts)[-1][:3] == ("healthy", "ok", "model_request")


async def test_two_agents_sharing_a_server_each_get_their_own_verdict(
    verdicts: Pipeline, model: ScriptedModel, request: pytest.FixtureRequest
) -> None:
    """Agent ``a`` keeps the toolset it listed before the edit, agent ``b`` was built on the
    re-listing; both call ``create_ticket`` on the same server, ``a`` first, then ``b``, then
    ``a`` again: each call reads its own agent's catalog, whatever the other agent holds."""
    info = _server_info("http", request)
    old = _toolset(info, tool_names=["create_ticket", "fail"])
    try:
        fresh = await _change(info, "trigger_edit")
        try:
            agent_a, agent_b = _agent(model, "a", old), _agent(model, "b", fresh)
            await _run(model, "a", agent_a, TICKET)
            await _run(model, "b", agent_b, TICKET)
            await _run(model, "a", agent_a, TICKET)
        finally:
            _close(fresh)
    finally:
        _close(old)
    assert (model.of("a")[-1].offered_tool("create_ticket") or {})["description"] == (
        "Creates a ticket."
    )
    assert model.of("b")[-1].offered == FIRST
    a1, b, a2 = _judged(verdicts)
    assert a1[:3] == a2[:3] == ("stale_catalog", "catalog_digest_mismatch", "model_request")
    assert b[:3] == ("healthy", "ok", "model_request")
    # each run of an agent is its own context here: labels tell the agents' calls apart, they
    # are not the agent object's name (docs/model.md#agents-tie)
    assert b[3] not in (a1[3], a2[3])


async def test_two_agents_sharing_one_stdio_session_each_get_their_own_install(
    verdicts: Pipeline, model: ScriptedModel, request: pytest.FixtureRequest
) -> None:
    """One ``MCPToolset`` (one stdio session) serves two agents: ``a`` is offered every tool,
    ``b`` only ``create_ticket`` (a filter: a subset, not drift). Both calls are healthy, each
    judged on its own agent."""
    toolset = _toolset(_server_info("stdio", request))
    try:
        only_ticket = [t for t in toolset.tools if t.name == "create_ticket"]
        agent_a, agent_b = _agent(model, "a", toolset), _agent(model, "b", only_ticket)
        await _run(model, "a", agent_a, TICKET)
        await _run(model, "b", agent_b, TICKET)
    finally:
        _close(toolset)
    assert model.of("a")[0].offered == FIRST
    assert model.of("b")[0].offered == ["create_ticket"]
    a, b = _judged(verdicts)
    assert a[:3] == b[:3] == ("healthy", "ok", "model_request")
    assert a[3] != b[3]


async def test_over_stdio_the_kept_catalog_is_stale_after_the_servers_signal(
    verdicts: Pipeline, model: ScriptedModel, request: pytest.FixtureRequest
) -> None:
    """Over stdio nothing lists the server again (a fresh toolset would be a fresh process): the
    agent keeps the old definition, and the ``list_changed`` the server sent on the agent's own
    session says the catalog it listed is no longer the server's."""
    toolset = _toolset(_server_info("stdio", request))
    try:
        agent = _agent(model, "a", toolset)
        await _run(model, "a", agent, ("trigger_edit", {}))
        await _run(model, "a", agent, TICKET)
    finally:
        _close(toolset)
    assert model.of("a")[-1].offered == FIRST
    assert _judged(verdicts)[-1][:3] == (
        "stale_catalog",
        "catalog_signal_after_discovery",
        "model_request",
    )
