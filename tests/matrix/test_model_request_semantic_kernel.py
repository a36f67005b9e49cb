"""semantic-kernel's ``ChatCompletionAgent`` over its MCP plugins, through its real OpenAI
connector (``OpenAIChatCompletion`` on an ``AsyncOpenAI`` client) pointed at the scripted API.

semantic-kernel has no hook of ours: the only evidence of what the agent installed is the model's
own request (``client_source = model_request``). How the framework behaves (measured, semantic-
kernel 1.45.0 on mcp 1.x, its own pin ``mcp < 2``):

- ``MCPStdioPlugin`` / ``MCPStreamableHttpPlugin`` list the tools at connect and bind one kernel
  function per tool on the plugin object; the agent offers them as ``<plugin>-<tool>``.
- ``ChatCompletionAgent(plugins=[plugin])`` copies those functions into its kernel once. The
  plugin re-lists on ``notifications/tools/list_changed`` and rebinds its own attributes, but the
  kernel keeps offering the functions it copied: the model stays on the old catalog until the
  application adds the plugin again (``kernel.add_plugin(plugin)``).
- The plugin's own ``message_handler`` awaits that re-listing inside the session's receive loop,
  so when the announcement rides a call's response (the server changed its catalog during the
  call), the re-listing waits for a response the blocked loop never reads: the agent hangs. The
  plugin's docstring invites subclassing the handler; :func:`_plugin`'s subclass does what an
  application has to, scheduling the re-listing instead of awaiting it.

Every cell runs over stdio and streamable HTTP and asserts the verdict of each call and what
each model request offered. Collected where semantic-kernel is installed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
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
PLUGIN = "tickets"
FIRST = ["create_ticket", "fail", "trigger_change", "trigger_edit"]
HEALTHY = ("tools/call create_ticket", "healthy", "ok")
KEPT_DEFINITION = ("tools/call create_ticket", "stale_catalog", "catalog_digest_mismatch")
KEPT_CATALOG = ("tools/call create_ticket", "stale_catalog", "catalog_earlier_catalog_offered")


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with scripted_model() as scripted:
        yield scripted


@pytest.fixture
def edit_url() -> Iterator[str]:
    """A fresh ``changing_server.py`` that also lists ``trigger_edit`` (streamable HTTP)."""
    with http_server(str(CHANGING_SERVER), "http", "edit") as url:
        yield url


def _plugin(transport: str, url: str) -> Any:
    """The MCP plugin over ``changing_server.py ... edit``, re-listing without blocking."""
    from mcp import types
    from semantic_kernel.connectors.mcp import MCPStdioPlugin, MCPStreamableHttpPlugin

    base = MCPStdioPlugin if transport == "stdio" else MCPStreamableHttpPlugin

    class _Reloading(base):  # type: ignore[misc, valid-type]
        """The plugin, its ``list_changed`` re-listing scheduled in a task (awaited by tests)."""

        reloads: list[asyncio.Task[None]]

        async def message_handler(self, message: Any) -> None:
            if isinstance(message, types.ServerNotification) and (
                message.root.method == "notifications/tools/list_changed"
            ):
                self.reloads.append(asyncio.get_running_loop().create_task(self.load_tools()))
                return
            await super().message_handler(message)

        async def reloaded(self) -> None:
            await asyncio.gather(*self.reloads)

    if transport == "stdio":
        args = [str(CHANGING_SERVER), "stdio", "edit"]
        plugin = _Reloading(name=PLUGIN, command=SERVER_PYTHON, args=args, load_prompts=False)
    else:
        plugin = _Reloading(name=PLUGIN, url=url + "/mcp", load_prompts=False)
    plugin.reloads = []
    return plugin


@pytest.fixture
async def agents(model: ScriptedModel) -> AsyncIterator[Callable[..., Any]]:
    """Makes a ``ChatCompletionAgent`` on the real OpenAI connector, its base URL the scripted
    API, given its name and plugin (``only``: the MCP tools its function choice includes);
    closes the clients on this loop."""
    from openai import AsyncOpenAI
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion

    opened: list[AsyncOpenAI] = []

    def make(name: str, plugin: Any, only: list[str] | None = None) -> Any:
        client = AsyncOpenAI(api_key="sk-test-not-used", base_url=model.base_url(name))
        opened.append(client)
        service = OpenAIChatCompletion(ai_model_id="gpt-4o", async_client=client)
        included = {"included_functions": [f"{PLUGIN}-{tool}" for tool in only or []]}
        choice = FunctionChoiceBehavior.Auto(filters=included if only else None)
        return ChatCompletionAgent(
            service=service, name=name, plugins=[plugin], function_choice_behavior=choice
        )

    yield make
    for client in opened:
        await client.close()


async def _turn(model: ScriptedModel, agent: Any, tool: str, **arguments: Any) -> None:
    """One ``get_response``: the model calls ``tool``, then answers ``done``; the call's outcome
    receipts are awaited before the next turn lists or calls anything."""
    model.script(agent.name, (tool, arguments))
    with anyio.fail_after(60):
        response = await agent.get_response(messages="go")
    assert str(response) == "done"
    assert await anyio.to_thread.run_sync(flush_receipts, 10.0)


def _offered(model: ScriptedModel, agent: str) -> list[list[str]]:
    """The MCP tool names each request of ``agent`` offered (the plugin prefix removed)."""
    return [[n.removeprefix(PLUGIN + "-") for n in r.offered] for r in model.of(agent)]


def _ticket(model: ScriptedModel, agent: str) -> dict[str, Any]:
    """The ``create_ticket`` definition the last request of ``agent`` offered."""
    definition = model.of(agent)[-1].offered_tool(f"{PLUGIN}-create_ticket")
    assert definition is not None
    return definition


def _sources(verdicts: Pipeline) -> set[Any]:
    spans = [s for s in verdicts.spans() if s.name.startswith("tools/call ")]
    return {(s.attributes or {}).get(A.CATALOG_CLIENT_SOURCE) for s in spans}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_offered_the_current_tools_is_healthy(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    async with _plugin(transport, edit_url) as plugin:
        agent = agents("a", plugin)
        await _turn(model, agent, "create_ticket", title="t")
    assert _offered(model, "a") == [FIRST, FIRST]
    assert calls(verdicts) == [HEALTHY]
    assert _sources(verdicts) == {"model_request"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_kept_old_definition_after_the_plugin_re_listed_is_stale(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    """``trigger_edit`` changes ``create_ticket``; the plugin re-lists, the kernel keeps the
    function it copied: the next request offers the old definition. The agent's function choice
    includes two of the plugin's tools, so what it offers is no earlier catalog of the server,
    only an old definition."""
    async with _plugin(transport, edit_url) as plugin:
        agent = agents("a", plugin, only=["create_ticket", "trigger_edit"])
        await _turn(model, agent, "trigger_edit")
        await plugin.reloaded()
        await _turn(model, agent, "create_ticket", title="t")
    assert _offered(model, "a")[-1] == ["create_ticket", "trigger_edit"]
    assert _ticket(model, "a")["description"] == "Creates a ticket."
    assert calls(verdicts)[-1] == KEPT_DEFINITION
    assert _sources(verdicts) == {"model_request"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_whole_old_catalog_after_an_edit_is_an_earlier_catalog(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    """The same edit with every tool of the plugin offered: the kernel offers exactly the
    server's first catalog, which reads as the earlier catalog (its own reason) rather than as
    one changed definition."""
    async with _plugin(transport, edit_url) as plugin:
        agent = agents("a", plugin)
        await _turn(model, agent, "trigger_edit")
        await plugin.reloaded()
        await _turn(model, agent, "create_ticket", title="t")
    assert _offered(model, "a")[-1] == FIRST
    assert _ticket(model, "a")["description"] == "Creates a ticket."
    assert calls(verdicts)[-1] == KEPT_CATALOG
    assert _sources(verdicts) == {"model_request"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_exactly_the_old_catalog_after_a_tool_was_added_is_stale(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    """``trigger_change`` only adds ``added_tool``; the plugin re-lists it, the kernel keeps
    offering exactly the first catalog (a subset of the new one, yet an earlier catalog)."""
    async with _plugin(transport, edit_url) as plugin:
        agent = agents("a", plugin)
        await _turn(model, agent, "trigger_change")
        await plugin.reloaded()
        assert hasattr(plugin, "added_tool")  # the plugin has it, the kernel does not
        await _turn(model, agent, "create_ticket", title="t")
    assert _offered(model, "a")[-2:] == [FIRST, FIRST]
    assert calls(verdicts)[-1] == KEPT_CATALOG
    assert _sources(verdicts) == {"model_request"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_plugin_added_again_offers_the_new_tools_and_is_not_stale(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    async with _plugin(transport, edit_url) as plugin:
        agent = agents("a", plugin)
        await _turn(model, agent, "trigger_edit")
        await _turn(model, agent, "trigger_change")
        await plugin.reloaded()
        agent.kernel.add_plugin(plugin)  # the application refreshes the kernel's copy
        await _turn(model, agent, "create_ticket", title="t")
    assert sorted(_offered(model, "a")[-1]) == sorted([*FIRST, "added_tool"])
    assert _ticket(model, "a")["description"] == "Creates a ticket with a priority."
    assert calls(verdicts)[-1] == HEALTHY
    assert _sources(verdicts) == {"model_request"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_two_agents_sharing_one_plugin_each_get_their_own_verdict(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    agents: Callable[..., Any],
    edit_url: str,
) -> None:
    """Two agents on one plugin (one session): ``old`` was built before ``trigger_edit`` and
    keeps the old catalog, ``new`` after the re-listing. They run at once, each in its own
    task; each call is judged against what its own model was offered."""
    async with _plugin(transport, edit_url) as plugin:
        old = agents("old", plugin)
        await _turn(model, old, "trigger_edit")
        await plugin.reloaded()
        new = agents("new", plugin)
        async with anyio.create_task_group() as group:
            group.start_soon(partial(_turn, model, old, "create_ticket", title="t"))
            group.start_soon(partial(_turn, model, new, "create_ticket", title="t"))
    assert _ticket(model, "old")["description"] == "Creates a ticket."
    assert _ticket(model, "new")["description"] == "Creates a ticket with a priority."
    assert sorted(calls(verdicts)[-2:]) == [HEALTHY, KEPT_CATALOG]
    assert _sources(verdicts) == {"model_request"}
