"""openai-agents through its own OpenAI model clients: judged on what the model was offered.

``Agent(model=OpenAIChatCompletionsModel(...) | OpenAIResponsesModel(...))`` with an
``openai.AsyncOpenAI(base_url=...)`` pointed at the scripted API, and ``MCPServerStdio`` /
``MCPServerStreamableHttp`` to ``changing_server.py`` (with ``edit``): ``Runner.run`` lists the
server at every turn (unless ``cache_tools_list=True``), converts the tools (the framework hook
reports that install) and sends them to the model (the model request the product reads). The
framework adds ``"strict": false`` to each definition and leaves the schema as the server lists
it. One scripted tool call per run (the scripted model answers ``done`` after a tool result).

With ``cache_tools_list=True`` the agent keeps the tools of its first turn. The server changes,
and the application lists again through the agent's own session (discovery converges on the new
catalog); the agent's next turn offers the old tools. When only a tool was added the hook's
install is a subset of the new listing (what it alone reads as converged): the model's request,
exactly the earlier catalog, overrules it. Collected where openai-agents is installed.
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


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OpenAI tracing exporter: nothing leaves 127.0.0.1."""
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with scripted_model() as scripted:
        yield scripted


#: The model clients a cell made, closed at its end on its own event loop.
_CLIENTS: list[Any] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while _CLIENTS:
        await _CLIENTS.pop().close()


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(transport, base URL): stdio, or streamable HTTP to a fresh server process."""
    if request.param == "stdio":
        yield "stdio", ""
        return
    with changing_http() as base:
        yield "http", base


def _mcp(transport: str, url: str, **options: Any) -> Any:
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp

    if transport == "stdio":
        command, args = stdio_command()
        return MCPServerStdio({"command": command, "args": args}, **options)
    return MCPServerStreamableHttp({"url": url + "/mcp"}, **options)


def _agent(model: ScriptedModel, name: str, mcp: Any, api: str = "chat") -> Any:
    """An ``Agent`` named ``name`` whose model client talks to the scripted API as ``name``."""
    import openai
    from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel

    client = openai.AsyncOpenAI(base_url=model.base_url(name), api_key="sk-test")
    _CLIENTS.append(client)
    kind = OpenAIChatCompletionsModel if api == "chat" else OpenAIResponsesModel
    return Agent(name=name, model=kind("scripted", client), mcp_servers=[mcp])


def _hooks() -> Any:
    """Run hooks that wait for the outcome receipts after each tool, before the next turn (a
    verified call's span stays open until its receipt; the next turn's listing would otherwise
    overlap it)."""
    from agents import RunHooks

    class Verified(RunHooks):  # type: ignore[misc]
        """Hooks whose ``on_tool_end`` waits for every outcome receipt."""

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            await receipts()

    return Verified()


async def _run(
    model: ScriptedModel, agent: Any, *calls: tuple[str, dict[str, Any]], streamed: bool = False
) -> None:
    """One ``Runner.run`` (or ``Runner.run_streamed``, its events consumed) per scripted call,
    each in a task of its own, as served agents run."""
    from agents import Runner

    for call in calls:
        model.script(agent.name, call)

        async def once() -> None:
            if streamed:
                result: Any = Runner.run_streamed(agent, "go", hooks=_hooks())
                async for _event in result.stream_events():
                    pass
            else:
                result = await Runner.run(agent, "go", hooks=_hooks())
            assert result.final_output == "done"

        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                group.start_soon(once)
    await receipts()


def _ticket(model: ScriptedModel, agent: str) -> tuple[str, Any]:
    """``create_ticket`` as ``agent``'s latest request offered it (description, schema)."""
    offered = model.of(agent)[-1].offered_tool("create_ticket")
    assert offered is not None
    assert offered["strict"] is False  # what openai-agents adds
    return offered["description"], offered["parameters"]


async def _relist(mcp: Any) -> list[str]:
    """The application lists again through the agent's session: discovery converges."""
    listed = await mcp.session.list_tools()
    return [tool.name for tool in listed.tools]


# ---- (a) offered the current tools ------------------------------------------------------------
@pytest.mark.parametrize("api", APIS)
async def test_a_model_offered_the_current_tools_is_healthy(
    api: str, server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    async with _mcp(*server) as mcp:
        await _run(model, _agent(model, "a", mcp, api), TICKET)
    assert model.of("a")[0].offered == FIRST_CATALOG
    assert _ticket(model, "a") == (DESCRIPTION_BEFORE, TICKET_BEFORE)
    assert judged(verdicts, "create_ticket") == [("healthy", "ok", MODEL_REQUEST)]
    call = last_call(verdicts, "create_ticket")
    assert OVERRULED_SOURCE not in call
    # the call ran in the context of the request that offered it: tied to that agent
    assert call[AGENT_TIED] is True


@pytest.mark.parametrize("api", APIS)
async def test_a_streamed_run_is_judged_on_its_request(
    api: str, server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    """``Runner.run_streamed``: the model client streams (``"stream": true``); what it offered
    is read all the same, and the call is tied to it."""
    async with _mcp(*server, cache_tools_list=True) as mcp:
        agent = _agent(model, "a", mcp, api)
        await _run(model, agent, ("trigger_change", {}), streamed=True)
        assert ADDED in await _relist(mcp)
        await _run(model, agent, TICKET, streamed=True)
    assert all(request.json.get("stream") is True for request in model.of("a"))
    assert model.of("a")[-1].offered == FIRST_CATALOG
    assert judged(verdicts, "create_ticket") == [
        ("stale_catalog", "catalog_earlier_catalog_offered", MODEL_REQUEST)
    ]
    assert last_call(verdicts, "create_ticket")[AGENT_TIED] is True


# ---- (b) a cached tools list: the old catalog after the server changed ------------------------
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("allowed", [False, True], ids=["every-tool", "tool-filter"])
async def test_a_cached_old_definition_is_stale(
    api: str, allowed: bool, server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    """``trigger_edit`` rewrites ``create_ticket``; the cached list keeps the old one, and the
    hook reports that same old install. With every tool the model is offered exactly the
    earlier catalog (its own reason), where the hook's install reads ``digest_mismatch``: the
    request's reason wins and the span says it overruled the hook. Under a ``tool_filter`` the
    model is offered the old definition of one tool, and both read ``digest_mismatch``."""
    options: dict[str, Any] = {"cache_tools_list": True}
    if allowed:
        options["tool_filter"] = {"allowed_tool_names": ["create_ticket", "trigger_edit"]}
    async with _mcp(*server, **options) as mcp:
        agent = _agent(model, "a", mcp, api)
        await _run(model, agent, ("trigger_edit", {}))
        await _relist(mcp)
        await _run(model, agent, TICKET)
    assert _ticket(model, "a") == (DESCRIPTION_BEFORE, TICKET_BEFORE)
    reason = "catalog_digest_mismatch" if allowed else "catalog_earlier_catalog_offered"
    assert judged(verdicts, "create_ticket") == [("stale_catalog", reason, MODEL_REQUEST)]
    overruled = last_call(verdicts, "create_ticket").get(OVERRULED_SOURCE)
    assert overruled == (None if allowed else "registered")


async def test_exactly_the_earlier_catalog_is_stale_and_overrules_the_hook(
    server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    """``trigger_change`` only adds ``added_tool``: the hook's install (the cached list) is a
    subset of the new listing, which it alone reads as converged; the model was offered exactly
    the earlier catalog, and its request wins."""
    async with _mcp(*server, cache_tools_list=True) as mcp:
        agent = _agent(model, "a", mcp)
        await _run(model, agent, ("trigger_change", {}))
        assert ADDED in await _relist(mcp)
        await _run(model, agent, TICKET)
    assert model.of("a")[-1].offered == FIRST_CATALOG
    assert judged(verdicts, "create_ticket") == [
        ("stale_catalog", "catalog_earlier_catalog_offered", MODEL_REQUEST)
    ]
    assert last_call(verdicts, "create_ticket")[OVERRULED_SOURCE] == "registered"


# ---- (c) the default lists at every turn: the new tools ------------------------------------------
@pytest.mark.parametrize("trigger", ["trigger_edit", "trigger_change"])
async def test_an_agent_that_lists_at_every_turn_is_not_stale(
    trigger: str, server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    async with _mcp(*server) as mcp:
        await _run(model, _agent(model, "a", mcp), (trigger, {}), TICKET)
    if trigger == "trigger_edit":
        assert _ticket(model, "a") == (DESCRIPTION_AFTER, TICKET_AFTER)
    else:
        assert model.of("a")[-1].offered == [*FIRST_CATALOG, ADDED]
    assert judged(verdicts, "create_ticket") == [("healthy", "ok", MODEL_REQUEST)]


# ---- (d) two agents, one server ------------------------------------------------------------------
@pytest.fixture
def http_url() -> Iterator[str]:
    with changing_http() as base:
        yield base


async def test_two_agents_sharing_a_server_each_get_their_own_verdict(
    http_url: str, model: ScriptedModel, verdicts: Pipeline
) -> None:
    """Agent ``old`` caches its tools list, agent ``new`` lists at every turn; each has its own
    session to the one streamable-HTTP server (over stdio each ``MCPServerStdio`` is a server
    process of its own). ``new`` installing the current catalog must not turn ``old`` green,
    whatever order they call in."""
    async with (
        _mcp("http", http_url, cache_tools_list=True) as cached,
        _mcp("http", http_url) as live,
    ):
        old, new = _agent(model, "old", cached), _agent(model, "new", live)
        await _run(model, old, ("trigger_edit", {}))
        await _relist(cached)  # the application lists again on the cached agent's session
        for agent in (new, old, new, old):
            await _run(model, agent, TICKET)
    assert _ticket(model, "old") == (DESCRIPTION_BEFORE, TICKET_BEFORE)
    assert _ticket(model, "new") == (DESCRIPTION_AFTER, TICKET_AFTER)
    healthy = ("healthy", "ok", MODEL_REQUEST)
    stale = ("stale_catalog", "catalog_earlier_catalog_offered", MODEL_REQUEST)
    assert judged(verdicts, "create_ticket") == [healthy, stale, healthy, stale]


async def test_another_sessions_discovery_makes_a_cached_agent_stale(
    http_url: str, model: ScriptedModel, verdicts: Pipeline
) -> None:
    """The cached agent's own session never lists again; agent ``new``'s session to the same
    server lists the edited catalog. What ``old`` offers is exactly the server's earlier complete
    discovery, not its latest: stale, though its own session saw no change."""
    async with (
        _mcp("http", http_url, cache_tools_list=True) as cached,
        _mcp("http", http_url) as live,
    ):
        old, new = _agent(model, "old", cached), _agent(model, "new", live)
        await _run(model, old, ("trigger_edit", {}))
        await _run(model, new, TICKET)
        await _run(model, old, TICKET)
    assert _ticket(model, "old") == (DESCRIPTION_BEFORE, TICKET_BEFORE)
    assert judged(verdicts, "create_ticket") == [
        ("healthy", "ok", MODEL_REQUEST),
        ("stale_catalog", "catalog_earlier_catalog_offered", MODEL_REQUEST),
    ]
