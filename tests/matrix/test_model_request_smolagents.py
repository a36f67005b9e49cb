"""smolagents through its real model client: the model's own request decides the catalog.

``ToolCallingAgent`` runs with ``OpenAIServerModel`` pointed at the scripted OpenAI-compatible
endpoint (tests/support/scripted_model.py) over the tools of mcpadapt's ``MCPAdapt`` with
``SmolAgentsAdapter`` (what ``ToolCollection.from_mcp`` and ``MCPClient`` run): one session per
server on mcpadapt's own thread and loop, so every call reaches the server process that changed.
smolagents rewrites what the model sees (measured below): it adds its own ``final_answer`` tool
(an application's own tool: it maps to no MCP tool), makes every property required and gives
each property the description ``see tool description``. ``MCPAdapt.tools()`` re-lists (the
framework hook records that as the install), but an agent keeps the tools it was built with.
Each call is judged on what its agent's model was offered (``client_source = model_request``,
docs/model.md#agents). The scripted model answers every request with the next scripted call
(smolagents hands tool results back as user messages), so each run ends with ``final_answer``.
Collected where smolagents is installed (with its ``openai`` extra; mcp 1.x).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
from tests.support.framework_cells import calls as framework_calls
from tests.support.framework_cells import in_thread
from tests.support.matrix_drivers import CHANGING_SERVER, SERVER_PYTHON, http_server
from tests.support.processor_helpers import Pipeline
from tests.support.scripted_model import ScriptedModel, scripted_model

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = [
    pytest.mark.anyio,
    # our hooks run on mcpadapt's loop thread: an exception that escapes there fails the test
    pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning"),
]

TRANSPORTS = ["stdio", "http"]
CATALOG = ["create_ticket", "fail", "trigger_change"]
EDITABLE = [*CATALOG, "trigger_edit"]
TICKET = ("create_ticket", {"title": "t"})
#: After the edit smolagents offers ``priority`` as required and refuses a call without it.
PRIORITY_TICKET = ("create_ticket", {"title": "t", "priority": "p"})
FINAL = ("final_answer", {"answer": "ok"})


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with scripted_model() as scripted:
        yield scripted


@contextmanager
def _adapt(transport: str, *flags: str) -> Iterator[tuple[Any, list[Any]]]:
    """``MCPAdapt`` with ``SmolAgentsAdapter`` on a fresh ``changing_server.py`` (``flags``:
    ``edit`` to list ``trigger_edit``): the adapter and the tools of its connect."""
    from mcpadapt.core import MCPAdapt
    from mcpadapt.smolagents_adapter import SmolAgentsAdapter

    adapter = SmolAgentsAdapter(structured_output=False)
    if transport == "stdio":
        from mcp import StdioServerParameters

        args = [str(CHANGING_SERVER), "stdio", *flags]
        adapt = MCPAdapt(StdioServerParameters(command=SERVER_PYTHON, args=args), adapter)
        with adapt as tools:
            yield adapt, tools
        return
    with http_server(str(CHANGING_SERVER), "http", *flags) as url:
        adapt = MCPAdapt({"url": url + "/mcp", "transport": "streamable-http"}, adapter)
        with adapt as tools:
            yield adapt, tools


def _agent(model: ScriptedModel, name: str, tools: list[Any]) -> Any:
    """A ``ToolCallingAgent`` on ``OpenAIServerModel`` pointed at ``name``'s endpoint."""
    from smolagents import OpenAIServerModel, ToolCallingAgent

    llm = OpenAIServerModel(model_id="scripted", api_base=model.base_url(name), api_key="k")
    return ToolCallingAgent(tools=tools, model=llm, max_steps=3, verbosity_level=-1)


def _ask(agent: Any, model: ScriptedModel, name: str, step: tuple[str, Any]) -> None:
    """One run: the model calls ``step``'s tool, then ``final_answer``."""
    model.script(name, step, FINAL)
    assert agent.run("go") == "ok"


async def _run(body: Callable[[], None]) -> None:
    """``body`` in a worker thread (smolagents is synchronous), then every receipt flushed."""

    def run() -> None:
        body()
        assert flush_receipts(10.0)

    await in_thread(run)


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


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_offered_the_current_tools_is_healthy(
    transport: str, verdicts: Pipeline, model: ScriptedModel
) -> None:
    def body() -> None:
        with _adapt(transport) as (_, tools):
            _ask(_agent(model, "a", tools), model, "a", TICKET)

    await _run(body)
    definitions = offered(model, "a")
    assert list(definitions) == [*CATALOG, "final_answer"]  # smolagents' own tool, last
    assert definitions["create_ticket"] == {
        "name": "create_ticket",
        "description": "Creates a ticket.",
        "parameters": {
            "type": "object",
            "properties": {"title": {"type": "string", "description": "see tool description"}},
            "required": ["title"],
        },
    }
    assert definitions["fail"]["parameters"] == {"type": "object", "properties": {}, "required": []}
    # the agent's loop runs the tool in the thread of its model request: the call is tied
    assert judged(verdicts, "create_ticket") == [("healthy", "ok", "model_request", None, True)]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_kept_old_definition_is_stale_though_the_hook_saw_the_relisting(
    transport: str, verdicts: Pipeline, model: ScriptedModel
) -> None:
    """The application hands its agent two of the tools; after ``trigger_edit`` it re-lists
    (``MCPAdapt.tools()``: the hook records the new definitions, converged) but the agent built
    earlier keeps offering the old ``create_ticket``: the model request wins over the hook's
    report, and the span says so."""
    relisted: list[Any] = []

    def body() -> None:
        with _adapt(transport, "edit") as (adapt, tools):
            chosen = [t for t in tools if t.name in ("create_ticket", "trigger_edit")]
            agent = _agent(model, "a", chosen)
            _ask(agent, model, "a", ("trigger_edit", {}))
            relisted.extend(adapt.tools())
            _ask(agent, model, "a", TICKET)

    await _run(body)
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
    offering exactly the three tools of the connect (and its own ``final_answer``)."""
    relisted: list[Any] = []

    def body() -> None:
        with _adapt(transport) as (adapt, tools):
            agent = _agent(model, "a", tools)
            _ask(agent, model, "a", ("trigger_change", {}))
            relisted.extend(adapt.tools())
            _ask(agent, model, "a", TICKET)

    await _run(body)
    assert [t.name for t in relisted] == [*CATALOG, "added_tool"]
    assert model.of("a")[-1].offered == [*CATALOG, "final_answer"]
    assert judged(verdicts, "create_ticket") == [
        ("stale_catalog", "catalog_earlier_catalog_offered", "model_request", "registered", True)
    ]
    assert changes(verdicts, "create_ticket") == [(None, None, True)]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_rebuilt_on_the_relisted_tools_is_healthy(
    transport: str, verdicts: Pipeline, model: ScriptedModel
) -> None:
    """The agent is rebuilt on ``MCPAdapt.tools()`` after ``trigger_edit``: its model request,
    in the same thread, replaces what this agent was offered."""

    def body() -> None:
        with _adapt(transport, "edit") as (adapt, tools):
            _ask(_agent(model, "a", tools), model, "a", ("trigger_edit", {}))
            _ask(_agent(model, "a", adapt.tools()), model, "a", PRIORITY_TICKET)

    await _run(body)
    definition = offered(model, "a")["create_ticket"]
    assert definition["description"] == "Creates a ticket with a priority."
    # the optional property is offered as required
    assert definition["parameters"]["required"] == ["title", "priority"]
    assert judged(verdicts, "create_ticket") == [("healthy", "ok", "model_request", None, True)]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_two_agents_sharing_the_server_each_get_their_own_verdict(
    transport: str, verdicts: Pipeline, model: ScriptedModel
) -> None:
    """Two agents, each run in a thread of its own: ``old`` keeps the tools of the connect,
    ``new`` is built on the tools re-listed after ``trigger_edit``; both call ``create_ticket``,
    ``new`` first (so the last install the hook saw is the current one). Each call is tied to
    its own agent and judged on what that agent's model was offered."""

    def body() -> None:
        with (
            _adapt(transport, "edit") as (adapt, tools),
            ThreadPoolExecutor(1) as old_thread,
            ThreadPoolExecutor(1) as new_thread,
        ):
            old = _agent(model, "old", tools)
            old_thread.submit(_ask, old, model, "old", ("trigger_edit", {})).result()
            new = _agent(model, "new", adapt.tools())
            new_thread.submit(_ask, new, model, "new", PRIORITY_TICKET).result()
            old_thread.submit(_ask, old, model, "old", TICKET).result()

    await _run(body)
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
    # the calls in start order: old's trigger_edit, new's create_ticket, old's create_ticket
    old_edit, new_ticket, old_ticket = [row[3] for row in framework_calls(verdicts, A.AGENT_LABEL)]
    assert old_edit == old_ticket != new_ticket
