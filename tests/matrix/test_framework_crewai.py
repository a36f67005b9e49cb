"""crewai-tools[mcp] over mcpadapt: a real ``Crew`` kickoff whose LLM is scripted.

``MCPServerAdapter`` starts ``MCPAdapt`` in its ``__init__`` (one ``ClientSession`` per server
on mcpadapt's thread, listed at connect and again in ``MCPAdapt.tools()``, where the mcpadapt
hook reports what ``CrewAIToolAdapter`` was handed). The LLM is a ``crewai.llms.base_llm.BaseLLM``
subclass without native function calling, so the agent runs CrewAI's own ReAct loop
(``CrewAgentExecutor``): ``call`` returns one ``Action:`` / ``Action Input:`` per step, then
``Final Answer:``, and records which tools the prompt offered (``Tool Name: ...``). CrewAI's
native function-calling path (``supports_function_calling() = True``) hands the tools to the
LLM's own provider code and is not driven here.

Cells, on ``changing_server.py`` over stdio and streamable HTTP: healthy ``create_ticket``;
``fail`` (``isError``, which CrewAI hands the agent as text); ``list_changed`` with the default
(the tools stay those of the connect: ``stale_catalog``). There is no refresh option:
``MCPServerAdapter`` exposes no re-list (its ``start()`` cannot run twice), so that cell is left
out. A 401 at connect (HTTP only: stdio has no authorization layer) makes ``MCPServerAdapter``
raise ``RuntimeError`` after its ``connect_timeout``. Telemetry, tracing, the first-run trace
prompt and the PyPI version check are off (``CREWAI_DISABLE_TELEMETRY``; never
``OTEL_SDK_DISABLED``, which would turn off the SDK the product exports with). Collected where
crewai-tools is installed (it pins ``mcp >= 1.30, < 2``).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from tests.support.framework_cells import calls as framework_calls
from tests.support.framework_cells import in_thread, installs, mcpadapt_server
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

for _name in (
    "CREWAI_DISABLE_TELEMETRY",
    "CREWAI_DISABLE_VERSION_CHECK",
    "CREWAI_TESTING",  # no first-run trace collection or prompt
):
    os.environ.setdefault(_name, "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

pytestmark = pytest.mark.anyio
#: Our hooks run on mcpadapt's loop thread: an exception that escapes there fails the test (a
#: module-wide mark would outrank the one test's "ignore" below, so each test carries it).
THREAD_EXCEPTIONS_FAIL = pytest.mark.filterwarnings(
    "error::pytest.PytestUnhandledThreadExceptionWarning"
)

TRANSPORTS = ["stdio", "http"]
TICKET = {"title": "t"}
CATALOG = ["create_ticket", "fail", "trigger_change"]
NAMES = [*CATALOG, "added_tool"]


def _llm(turns: list[tuple[str, dict[str, Any]]]) -> Any:
    from crewai.llms.base_llm import BaseLLM

    class ScriptedLLM(BaseLLM):
        """One ReAct action per call, then the final answer; no LLM."""

        script: list[tuple[str, dict[str, Any]]]
        offered: list[list[str]]

        def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
            prompt = json.dumps(messages)
            self.offered.append([name for name in NAMES if f"Tool Name: {name}" in prompt])
            if not self.script:
                return "Thought: done\nFinal Answer: ok"
            name, arguments = self.script.pop(0)
            return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(arguments)}"

        def supports_function_calling(self) -> bool:
            return False

    return ScriptedLLM(model="scripted", script=list(turns), offered=[])


def _kickoff(tools: list[Any], turns: list[tuple[str, dict[str, Any]]]) -> Any:
    """CrewAI's agent loop over ``tools``; returns the LLM (the tools it was offered)."""
    from crewai import Agent, Crew, Task

    llm = _llm(turns)
    agent = Agent(role="clerk", goal="file tickets", backstory="-", tools=tools, llm=llm)
    task = Task(description="Handle the ticket.", expected_output="ok", agent=agent)
    assert str(Crew(agents=[agent], tasks=[task]).kickoff()) == "ok"
    return llm


def calls(pipeline: Pipeline) -> list[tuple[Any, ...]]:
    """The calls in start order, each with the source of the catalog its client was handed."""
    return framework_calls(pipeline, A.CATALOG_CLIENT_SOURCE)


@THREAD_EXCEPTIONS_FAIL
@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_crewai_healthy_and_is_error(
    transport: str, verdicts: Pipeline, request: pytest.FixtureRequest
) -> None:
    from crewai_tools import MCPServerAdapter

    server = mcpadapt_server(transport, request)

    def run() -> Any:
        with MCPServerAdapter(server) as tools:
            llm = _kickoff(list(tools), [("create_ticket", TICKET), ("fail", {})])
        assert flush_receipts(10.0)
        return llm

    llm = await in_thread(run)
    assert llm.offered == [CATALOG] * 3
    assert calls(verdicts) == [
        ("tools/call create_ticket", "healthy", "ok", "digest"),
        ("tools/call fail", "tool_failed", "is_error", "digest"),
    ]
    # the hook recorded what MCPAdapt.tools() adapted, against the session's discovery
    assert installs(verdicts) == [("converged", "ok", 3)]


@THREAD_EXCEPTIONS_FAIL
@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_crewai_keeps_its_tools_after_list_changed(
    transport: str, verdicts: Pipeline, request: pytest.FixtureRequest
) -> None:
    """The default (and only) behaviour: nothing re-lists after the signal."""
    from crewai_tools import MCPServerAdapter

    server = mcpadapt_server(transport, request)

    def run() -> Any:
        with MCPServerAdapter(server) as tools:
            llm = _kickoff(list(tools), [("trigger_change", {}), ("create_ticket", TICKET)])
        assert flush_receipts(10.0)
        return llm

    llm = await in_thread(run)
    assert llm.offered == [CATALOG] * 3  # added_tool never reaches the agent
    assert calls(verdicts) == [
        ("tools/call trigger_change", "stale_catalog", "catalog_signal_after_discovery", "digest"),
        ("tools/call create_ticket", "stale_catalog", "catalog_signal_after_discovery", "digest"),
    ]
    assert installs(verdicts) == [("converged", "ok", 3)]


@THREAD_EXCEPTIONS_FAIL
@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_crewai_named_tools_install_the_subset_the_agent_holds(
    transport: str, verdicts: Pipeline, request: pytest.FixtureRequest
) -> None:
    """``MCPServerAdapter(params, *names)`` filters after ``MCPAdapt.tools()``: the agent holds
    two of the three tools, and the install is those two MCP definitions: converged."""
    from crewai_tools import MCPServerAdapter

    server = mcpadapt_server(transport, request)

    def run() -> Any:
        with MCPServerAdapter(server, "create_ticket", "fail") as tools:
            llm = _kickoff(list(tools), [("create_ticket", TICKET)])
        assert flush_receipts(10.0)
        return llm

    llm = await in_thread(run)
    assert llm.offered == [["create_ticket", "fail"]] * 2
    assert calls(verdicts) == [("tools/call create_ticket", "healthy", "ok", "digest")]
    assert installs(verdicts) == [("converged", "ok", 2)]


@THREAD_EXCEPTIONS_FAIL
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_crewai_names_that_match_no_tool_are_not_converged(
    transport: str, verdicts: Pipeline, request: pytest.FixtureRequest
) -> None:
    """Names that match none of the server's tools leave the agent without tools: the install is
    empty and reads ``nothing_installed``, not converged."""
    from crewai_tools import MCPServerAdapter

    server = mcpadapt_server(transport, request)

    def run() -> Any:
        with MCPServerAdapter(server, "no_such_tool") as tools:
            assert list(tools) == []
            return _kickoff([], [])

    llm = await in_thread(run)
    assert llm.offered == [[]]
    assert installs(verdicts) == [("stale", "nothing_installed", 0)]


# mcpadapt's loop thread dies with the connect error before start() times out: this test alone
# lets an unhandled thread exception through (anywhere else it may be one of our hooks failing).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
async def test_crewai_401_at_connect(verdicts: Pipeline, changing_url: str) -> None:
    """HTTP only (stdio has no authorization layer): mcpadapt's thread dies on the 401 and
    ``MCPServerAdapter`` raises ``RuntimeError`` after ``connect_timeout``."""
    from crewai_tools import MCPServerAdapter

    server = {"url": changing_url + "/authn", "transport": "streamable-http"}

    def run() -> None:
        with pytest.raises(RuntimeError, match="Failed to initialize MCP Adapter"):
            MCPServerAdapter(server, connect_timeout=5)

    await in_thread(run)
    handshake = verdicts.last("initialize").attributes or {}
    assert (handshake[A.VERDICT], handshake[A.REASON]) == ("needs_auth", "invalid_token")
    assert verdicts.counts(A.METRIC_INCIDENTS, A.VERDICT) == {"needs_auth": 1}
    assert installs(verdicts) == []
