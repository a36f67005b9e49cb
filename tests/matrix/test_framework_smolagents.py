"""smolagents[mcp] over mcpadapt: its real ``ToolCallingAgent`` loop, driven by a scripted model.

``ToolCollection.from_mcp`` (and ``MCPClient``) run ``MCPAdapt``: one ``ClientSession`` per
server on mcpadapt's own thread and loop, listed at connect and again in ``MCPAdapt.tools()``,
where the mcpadapt hook reports what ``SmolAgentsAdapter`` was handed. The model is a
``smolagents.models.Model`` subclass whose ``generate`` returns one scripted tool call per step
and then ``final_answer``; it records the tool names the agent offered it at each step.

Every scenario runs on ``changing_server.py`` (stdio and streamable HTTP): the reference
server's tools with ``inputSchema = {"type": "object"}`` (no ``properties``) make
``SmolAgentsAdapter.adapt`` raise ``KeyError('properties')``, so ``from_mcp`` cannot load it
(the hook then reports nothing). Cells: healthy ``create_ticket``; ``fail`` (``isError``,
which smolagents hands the model as text); ``list_changed`` with the default (the tools stay
those of the connect: ``stale_catalog``) and with mcpadapt's refresh (``MCPAdapt.tools()``
again, "get latest tools": a new install, ``converged``); mcpadapt's async path (``async with
MCPAdapt``, ``atools()``) with an application's own ``ToolAdapter``; a 401 at connect (HTTP
only: stdio has no authorization layer), which mcpadapt turns into ``TimeoutError`` after its
``connect_timeout``. Collected where smolagents is installed (it needs ``mcp < 2``: mcpadapt
imports ``streamablehttp_client``).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.support.framework_cells import calls as framework_calls
from tests.support.framework_cells import in_thread, installs, mcpadapt_server
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio
#: Our hooks run on mcpadapt's loop thread: an exception that escapes there fails the test (a
#: module-wide mark would outrank the one test's "ignore" below, so each test carries it).
THREAD_EXCEPTIONS_FAIL = pytest.mark.filterwarnings(
    "error::pytest.PytestUnhandledThreadExceptionWarning"
)

TRANSPORTS = ["stdio", "http"]
TICKET = {"title": "t"}
#: The changing server's catalog, as the agent offers it (with smolagents' own final_answer).
OFFER = ["create_ticket", "fail", "final_answer", "trigger_change"]
FINAL: tuple[str, dict[str, Any]] = ("final_answer", {"answer": "ok"})


def _model(turns: list[tuple[str, dict[str, Any]]]) -> Any:
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
        Model,
    )

    class ScriptedModel(Model):
        """One tool call per step, then ``final_answer``; no LLM."""

        def __init__(self) -> None:
            super().__init__(model_id="scripted")
            self.turns = list(turns)
            self.offered: list[list[str]] = []

        def generate(
            self,
            messages: list[Any],
            stop_sequences: list[str] | None = None,
            response_format: dict[str, str] | None = None,
            tools_to_call_from: list[Any] | None = None,
            **kwargs: Any,
        ) -> Any:
            self.offered.append(sorted(tool.name for tool in tools_to_call_from or []))
            name, arguments = self.turns.pop(0) if self.turns else FINAL
            function = ChatMessageToolCallFunction(name=name, arguments=arguments)
            step = len(self.offered)
            call = ChatMessageToolCall(id=f"call_{step}", type="function", function=function)
            return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])

    return ScriptedModel()


def _run_agent(tools: list[Any], turns: list[tuple[str, dict[str, Any]]]) -> Any:
    """smolagents' ``ToolCallingAgent`` loop over ``tools``; returns the model (its offers)."""
    from smolagents import ToolCallingAgent

    model = _model(turns)
    agent = ToolCallingAgent(tools=tools, model=model, max_steps=len(turns) + 2, verbosity_level=-1)
    assert agent.run("Handle the ticket.") == "ok"
    return model


def calls(pipeline: Pipeline) -> list[tuple[Any, ...]]:
    """The calls in start order, each with the source of the catalog its client was handed."""
    return framework_calls(pipeline, A.CATALOG_CLIENT_SOURCE)


@THREAD_EXCEPTIONS_FAIL
@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_smolagents_healthy_and_is_error(
    transport: str, verdicts: Pipeline, request: pytest.FixtureRequest
) -> None:
    from smolagents import ToolCollection

    server = mcpadapt_server(transport, request)

    def run() -> Any:
        with ToolCollection.from_mcp(server, trust_remote_code=True, structured_output=False) as tc:
            model = _run_agent(tc.tools, [("create_ticket", TICKET), ("fail", {})])
        assert flush_receipts(10.0)
        return model

    model = await in_thread(run)
    assert model.offered == [OFFER] * 3
    assert calls(verdicts) == [
        ("tools/call create_ticket", "healthy", "ok", "digest"),
        ("tools/call fail", "tool_failed", "is_error", "digest"),
    ]
    # the hook recorded what MCPAdapt.tools() adapted, against the session's discovery
    assert installs(verdicts) == [("converged", "ok", 3)]


@THREAD_EXCEPTIONS_FAIL
@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_smolagents_keeps_its_tools_after_list_changed(
    transport: str, verdicts: Pipeline, request: pytest.FixtureRequest
) -> None:
    """The default: nothing re-lists after the signal, the agent keeps the connect's tools."""
    from smolagents import ToolCollection

    server = mcpadapt_server(transport, request)

    def run() -> Any:
        with ToolCollection.from_mcp(server, trust_remote_code=True, structured_output=False) as tc:
            model = _run_agent(tc.tools, [("trigger_change", {}), ("create_ticket", TICKET)])
        assert flush_receipts(10.0)
        return model

    model = await in_thread(run)
    assert model.offered == [OFFER] * 3  # added_tool never reaches the model
    assert calls(verdicts) == [
        ("tools/call trigger_change", "stale_catalog", "catalog_signal_after_discovery", "digest"),
        ("tools/call create_ticket", "stale_catalog", "catalog_signal_after_discovery", "digest"),
    ]
    assert installs(verdicts) == [("converged", "ok", 3)]


@THREAD_EXCEPTIONS_FAIL
@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_smolagents_with_mcpadapt_refresh(
    transport: str, verdicts: Pipeline, request: pytest.FixtureRequest
) -> None:
    """mcpadapt's refresh: ``MCPAdapt.tools()`` again re-lists and adapts the new catalog; the
    next agent gets it, and the hook reports that install."""
    from mcpadapt.core import MCPAdapt
    from mcpadapt.smolagents_adapter import SmolAgentsAdapter

    adapt = MCPAdapt(
        mcpadapt_server(transport, request), SmolAgentsAdapter(structured_output=False)
    )

    def run() -> list[Any]:
        with adapt as tools:
            before = _run_agent(tools, [("trigger_change", {})])
            after = _run_agent(adapt.tools(), [("create_ticket", TICKET)])
        assert flush_receipts(10.0)
        return [before, after]

    before, after = await in_thread(run)
    assert before.offered == [OFFER] * 2
    assert after.offered == [sorted([*OFFER, "added_tool"])] * 2
    assert calls(verdicts) == [
        ("tools/call trigger_change", "stale_catalog", "catalog_signal_after_discovery", "digest"),
        ("tools/call create_ticket", "healthy", "ok", "digest"),
    ]
    assert installs(verdicts) == [("converged", "ok", 3), ("converged", "ok", 4)]


# mcpadapt's loop thread dies with the connect error before start() times out: this test alone
# lets an unhandled thread exception through (anywhere else it may be one of our hooks failing).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
async def test_smolagents_401_at_connect(verdicts: Pipeline, changing_url: str) -> None:
    """HTTP only (stdio has no authorization layer): mcpadapt's thread dies on the 401 and
    ``MCPClient`` raises ``TimeoutError`` after ``connect_timeout``."""
    from smolagents import MCPClient

    server = {"url": changing_url + "/authn", "transport": "streamable-http"}

    def run() -> None:
        with pytest.raises(TimeoutError):
            MCPClient(server, adapter_kwargs={"connect_timeout": 5}, structured_output=False)

    await in_thread(run)
    handshake = verdicts.last("initialize").attributes or {}
    assert (handshake[A.VERDICT], handshake[A.REASON]) == ("needs_auth", "invalid_token")
    assert verdicts.counts(A.METRIC_INCIDENTS, A.VERDICT) == {"needs_auth": 1}
    assert installs(verdicts) == []


@THREAD_EXCEPTIONS_FAIL
@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_mcpadapt_async_path(
    transport: str, verdicts: Pipeline, request: pytest.FixtureRequest
) -> None:
    """``async with MCPAdapt(...)`` installs through ``atools()`` (mcpadapt's LangChain and
    google-genai adapters; smolagents' adapter is sync-only): an application's own
    ``ToolAdapter`` that keeps the bound calls, on the test's loop."""
    from mcpadapt.core import MCPAdapt, ToolAdapter

    class Bound(ToolAdapter):
        """An application's own async-only ``ToolAdapter``: it keeps each tool as (name, bound
        coroutine function), so the test calls it on its own loop."""

        def adapt(self, func: Any, mcp_tool: Any) -> Any:
            raise NotImplementedError

        def async_adapt(self, afunc: Any, mcp_tool: Any) -> Any:
            return mcp_tool.name, afunc

    with anyio.fail_after(120):
        async with MCPAdapt(mcpadapt_server(transport, request), Bound()) as tools:
            await dict(tools)["create_ticket"](TICKET)
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert calls(verdicts) == [("tools/call create_ticket", "healthy", "ok", "digest")]
    assert installs(verdicts) == [("converged", "ok", 3)]
