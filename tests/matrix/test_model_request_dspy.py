"""dspy agents over MCP tools (``dspy.Tool.from_mcp_tool``), judged on what their model was offered.

The application owns the MCP session, as dspy's MCP tutorial writes it: a ``ClientSession`` over
stdio or streamable HTTP, ``list_tools()``, and one ``dspy.Tool.from_mcp_tool(session, tool)`` per
tool. dspy never lists again by itself and ignores ``notifications/tools/list_changed``: an
application that re-lists converts the new listing itself, or keeps the tools it converted.

Its language model is ``dspy.LM("openai/...", api_base=..., engine="litellm")``: the request goes
through LiteLLM (which sends it over its own HTTP client, not the ``openai`` SDK) to the scripted
Chat Completions endpoint (``tests/support/scripted_model.py``). dspy's default engine (``"auto"``)
sends a request it can represent through its own bundled client, neither LiteLLM nor ``openai``: no
model request is read there (docs/frameworks.md says so).

Two ways of letting the model pick a tool:

- Native tool calling (a signature with a ``list[dspy.Tool]`` input and a ``dspy.ToolCalls``
  output, ``ChatAdapter(use_native_function_calling=True)``): the request's ``tools`` carries one
  function per MCP tool, and each call is judged on that request (``client_source =
  model_request``). dspy rewrites the schema: only ``type``, ``properties`` and ``required`` are
  kept, and every property without a ``default`` is listed as required.
- ``dspy.ReAct``: the tools are described in the prompt's text and the model answers in dspy's
  field format; the request carries no ``tools``, so there is no model request to judge on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
import tests.support.scripted_model as scripted
from tests.support.framework_cells import calls, tool_calls
from tests.support.matrix_drivers import CHANGING_SERVER, MCP_MAJOR, SERVER_PYTHON, http_server
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
    """LiteLLM and dspy read their bundled model tables instead of fetching them."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with scripted_model() as served:
        yield served


@pytest.fixture
def edit_url() -> Iterator[str]:
    """A fresh ``changing_server.py`` over streamable HTTP that also lists ``trigger_edit``."""
    with http_server(str(CHANGING_SERVER), "http", "edit") as url:
        yield url


@asynccontextmanager
async def _session(transport: str, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """The application's ``ClientSession`` to ``changing_server.py ... edit``, initialized."""
    from mcp import ClientSession

    async with _streams(transport, request) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def _streams(transport: str, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    if transport == "stdio":
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        argv = [str(CHANGING_SERVER), "stdio", "edit"]
        async with stdio_client(StdioServerParameters(command=SERVER_PYTHON, args=argv)) as pair:
            yield pair[0], pair[1]
        return
    url = request.getfixturevalue("edit_url") + "/mcp"
    if MCP_MAJOR == 1:
        from mcp.client.streamable_http import streamablehttp_client

        async with streamablehttp_client(url) as (read, write, _session_id):
            yield read, write
        return
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write):
        yield read, write


async def _convert(session: Any) -> list[Any]:
    """List the server and convert every tool, as the application does at start and when it
    picks up a changed catalog."""
    import dspy

    listing = await session.list_tools()
    return [dspy.Tool.from_mcp_tool(session, tool) for tool in listing.tools]


def _lm(model: ScriptedModel, name: str) -> Any:
    """The agent ``name``'s model: LiteLLM's OpenAI route to the scripted endpoint."""
    import dspy

    return dspy.LM(
        "openai/gpt-4o-mini",
        api_base=model.base_url(name),
        api_key="sk-test-not-used",
        cache=False,
        engine="litellm",
    )


def _signature() -> Any:
    """question, tools -> the model's tool calls (built from types, not annotations, which this
    module's ``from __future__ import annotations`` would leave as strings)."""
    import dspy

    fields = {
        "question": (str, dspy.InputField()),
        "tools": (list[dspy.Tool], dspy.InputField()),
        "outputs": (dspy.ToolCalls, dspy.OutputField()),
    }
    return dspy.Signature(fields, "Use the tools to answer.")


async def _turn(model: ScriptedModel, name: str, tools: list[Any], step: tuple[str, Any]) -> None:
    """One turn of agent ``name`` with native tool calling: its model, offered ``tools``, calls
    ``step``; the application runs the call through the converted tool; then every outcome
    receipt is in."""
    import dspy

    model.script(name, step)
    adapter = dspy.ChatAdapter(use_native_function_calling=True)
    with anyio.fail_after(120), dspy.context(lm=_lm(model, name), adapter=adapter):
        prediction = await dspy.Predict(_signature()).acall(question="go", tools=tools)
        by_name = {tool.name: tool for tool in tools}
        [call] = prediction.outputs.tool_calls
        assert call.name == step[0]
        await by_name[call.name].acall(**call.args)
    assert await anyio.to_thread.run_sync(flush_receipts, 10.0)


def _judged(pipeline: Pipeline, tool: str = "create_ticket") -> list[tuple[Any, ...]]:
    """Each call of ``tool``, in start order: (verdict, reason, client source, agent label)."""
    rows = []
    for span in tool_calls(pipeline):
        a = span.attributes or {}
        if span.name == f"tools/call {tool}":
            row = (a.get(A.VERDICT), a.get(A.REASON), a.get(A.CATALOG_CLIENT_SOURCE))
            rows.append((*row, a.get(AGENT_LABEL)))
    return rows


#: ``create_ticket`` as dspy offers it, before and after ``trigger_edit`` (measured): the MCP
#: schema reduced to type/properties/required, every property without a default required.
OFFERED = {
    "name": "create_ticket",
    "description": "Creates a ticket.",
    "parameters": {
        "type": "object",
        "properties": {"title": {"type": "string"}},
        "required": ["title"],
    },
}
OFFERED_EDITED = {
    "name": "create_ticket",
    "description": "Creates a ticket with a priority.",
    "parameters": {
        "type": "object",
        "properties": {"title": {"type": "string"}, "priority": {"type": "string"}},
        "required": ["title", "priority"],
    },
}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_offered_the_current_tools_is_healthy(
    transport: str, verdicts: Pipeline, model: ScriptedModel, request: pytest.FixtureRequest
) -> None:
    async with _session(transport, request) as session:
        await _turn(model, "a", await _convert(session), TICKET)
    [offered] = model.of("a")
    assert offered.offered == FIRST
    assert offered.offered_tool("create_ticket") == OFFERED
    assert calls(verdicts) == [("tools/call create_ticket", "healthy", "ok")]
    [(*_, source, label)] = _judged(verdicts)
    assert source == "model_request"
    assert str(label).startswith("litellm/")


def _only(tools: list[Any], *names: str) -> list[Any]:
    """The tools the application hands one agent (a filter: a subset of what it converted)."""
    return [tool for tool in tools if tool.name in names]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_keeping_the_old_definition_after_a_re_listing_is_stale(
    transport: str, verdicts: Pipeline, model: ScriptedModel, request: pytest.FixtureRequest
) -> None:
    """The agent is handed two of the converted tools. The server edits ``create_ticket``; the
    application lists again (the new definition is discovered) but keeps the tools it converted
    first: the model is offered the old definition."""
    async with _session(transport, request) as session:
        tools = _only(await _convert(session), "create_ticket", "fail")
        await session.call_tool("trigger_edit", {})  # the application's own call
        await _convert(session)  # the re-listing, not handed to the agent
        await _turn(model, "a", tools, TICKET)
    assert model.of("a")[-1].offered == ["create_ticket", "fail"]
    assert model.of("a")[-1].offered_tool("create_ticket") == OFFERED
    assert _judged(verdicts)[-1][:3] == (
        "stale_catalog",
        "catalog_digest_mismatch",
        "model_request",
    )


@pytest.mark.parametrize("change", ["trigger_edit", "trigger_change"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_offered_exactly_the_earlier_catalog_is_stale(
    transport: str,
    change: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    request: pytest.FixtureRequest,
) -> None:
    """The agent's model calls ``trigger_edit`` (``create_ticket`` changes) or
    ``trigger_change`` (only ``added_tool`` is added); the application lists again and keeps
    the tools it converted first: the model is offered exactly the first listing's catalog
    (after an added tool, a subset of the new one, yet the old catalog)."""
    async with _session(transport, request) as session:
        tools = await _convert(session)
        await _turn(model, "a", tools, (change, {}))
        assert len(await _convert(session)) == len(FIRST) + (change == "trigger_change")
        await _turn(model, "a", tools, TICKET)
    assert model.of("a")[-1].offered == FIRST
    assert model.of("a")[-1].offered_tool("create_ticket") == OFFERED
    assert _judged(verdicts)[-1][:3] == (
        "stale_catalog",
        "catalog_earlier_catalog_offered",
        "model_request",
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_offering_the_re_listing_is_not_stale(
    transport: str, verdicts: Pipeline, model: ScriptedModel, request: pytest.FixtureRequest
) -> None:
    """After the edit and the added tool the application converts the re-listing and offers it:
    the model sees the edited definition (rewritten by dspy) and ``added_tool``; healthy."""
    async with _session(transport, request) as session:
        tools = await _convert(session)
        await _turn(model, "a", tools, ("trigger_edit", {}))
        await _turn(model, "a", tools, ("trigger_change", {}))
        await _turn(model, "a", await _convert(session), TICKET)
    last = model.of("a")[-1]
    assert last.offered == [*FIRST, "added_tool"]
    assert last.offered_tool("create_ticket") == OFFERED_EDITED
    assert _judged(verdicts)[-1][:3] == ("healthy", "ok", "model_request")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_two_agents_sharing_a_session_each_get_their_own_verdict(
    transport: str, verdicts: Pipeline, model: ScriptedModel, request: pytest.FixtureRequest
) -> None:
    """Agents ``a`` and ``b`` (two models) share one session: ``a`` keeps two of the tools
    converted before the edit, ``b`` is handed the re-listing. ``a`` calls, then ``b``, then
    ``a`` again: each call reads what its own turn's request offered, whatever the other agent
    holds."""
    async with _session(transport, request) as session:
        old = _only(await _convert(session), "create_ticket", "fail")
        await session.call_tool("trigger_edit", {})
        new = await _convert(session)
        await _turn(model, "a", old, TICKET)
        await _turn(model, "b", new, TICKET)
        await _turn(model, "a", old, TICKET)
    assert model.of("a")[-1].offered_tool("create_ticket") == OFFERED
    assert model.of("b")[-1].offered_tool("create_ticket") == OFFERED_EDITED
    a1, b, a2 = _judged(verdicts)
    assert a1[:3] == a2[:3] == ("stale_catalog", "catalog_digest_mismatch", "model_request")
    assert b[:3] == ("healthy", "ok", "model_request")
    # each call is tied to the request of its own turn (the context it runs in); LiteLLM has no
    # client object to tell the two models apart, so both may carry the same agent label
    assert all(str(row[3]).startswith("litellm/") for row in (a1, b, a2))


# ---- dspy.ReAct: the tools are in the prompt's text, not in the request's ``tools`` -------------
def _field_reply(name: str, call: tuple[str, str] | None, n: int) -> dict[str, Any]:
    """A Chat Completions reply in dspy's field format: ReAct's next tool (``finish`` when the
    script is empty), and the fields of ReAct's closing extraction (``reasoning``, ``answer``);
    dspy's ``ChatAdapter`` reads the fields its signature asks for and ignores the others."""
    tool, arguments = call or ("finish", "{}")
    text = "\n\n".join(
        f"[[ ## {field} ## ]]\n{value}"
        for field, value in [
            ("next_thought", "next"),
            ("next_tool_name", tool),
            ("next_tool_args", arguments),
            ("reasoning", "done"),
            ("answer", "done"),
        ]
    )
    reply = _CHAT(name, None, n)
    reply["choices"][0]["message"]["content"] = text + "\n\n[[ ## completed ## ]]"
    return reply


_CHAT = scripted._chat


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_react_offers_no_tools_in_its_request(
    transport: str,
    verdicts: Pipeline,
    model: ScriptedModel,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``dspy.ReAct`` lists the tools in its instructions and the model names one in its text:
    every request carries no ``tools``. The call is not judged on a model request (none offered
    the tool); what was discovered still judges it."""
    import dspy

    monkeypatch.setattr(scripted, "_chat", _field_reply)
    async with _session(transport, request) as session:
        react = dspy.ReAct("question -> answer", tools=await _convert(session), max_iters=3)
        model.script("a", TICKET)
        with anyio.fail_after(120), dspy.context(lm=_lm(model, "a")):
            prediction = await react.acall(question="go")
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert prediction.answer == "done"
    assert [prediction.trajectory[f"tool_name_{i}"] for i in range(2)] == [
        "create_ticket",
        "finish",
    ]
    requests = model.of("a")
    assert requests
    assert all("tools" not in r.json for r in requests)
    assert "(1) create_ticket, whose description is <desc>Creates a ticket.</desc>" in str(
        requests[0].json["messages"][0]["content"]
    )
    assert calls(verdicts) == [("tools/call create_ticket", "healthy", "ok")]
    [(*_, source, _label)] = _judged(verdicts)
    assert source != "model_request"
