"""google-adk's own agent loop (``LlmAgent`` run by ``InMemoryRunner``) over ``McpToolset``, with a
scripted ``BaseLlm`` subclass (one function call per model step, then text).

ADK pools one session per header identity and reuses it across invocations; it lists the tools
once per invocation (``McpToolset.get_tools``, the framework hook's install) and never handles
``list_changed``. Every cell runs over stdio and streamable HTTP: healthy, ``isError``, a catalog
change (the same invocation's next call is stale, the next invocation lists again and converges;
with ``tool_list_cache_ttl_seconds`` it stays stale) and a 401 at connect (HTTP only; ADK drops
the toolset and runs on). Collected where google-adk[mcp] is installed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest
from tests.support.framework_cells import assert_installed, assert_judged, calls, listed_tools
from tests.support.matrix_drivers import CHANGING_SERVER, SERVER_PYTHON, assert_installed_once
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio

TRANSPORTS = ["stdio", "http"]
Steps = list[tuple[str, dict[str, Any]]]


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "unused")  # nothing reaches Google: the model is ours


def _toolset(transport: str, url: str, **options: Any) -> Any:
    from google.adk.tools.mcp_tool.mcp_session_manager import (
        StdioConnectionParams,
        StreamableHTTPConnectionParams,
    )
    from google.adk.tools.mcp_tool.mcp_toolset import McpToolset
    from mcp import StdioServerParameters

    params: Any = (
        StdioConnectionParams(
            server_params=StdioServerParameters(
                command=SERVER_PYTHON, args=[str(CHANGING_SERVER), "stdio"]
            ),
            timeout=30,
        )
        if transport == "stdio"
        else StreamableHTTPConnectionParams(url=url, timeout=30)
    )
    return McpToolset(connection_params=params, **options)


def _model(offers: list[set[str]]) -> Any:
    """A ``BaseLlm`` that plays ``script`` (set per invocation): one function call per step, then
    text; it records the tool names each step offered."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    class Scripted(BaseLlm):
        """A ``BaseLlm`` that answers with the next function call of its ``script``, then the text
        "done"; it records the tool names each request offered."""

        model: str = "scripted"
        script: Any = None

        async def generate_content_async(
            self, llm_request: Any, stream: bool = False
        ) -> AsyncIterator[LlmResponse]:
            offers.append(set(llm_request.tools_dict))
            step = next(self.script, None)
            if step is None:
                part = types.Part(text="done")
            else:
                name, args = step
                call = types.FunctionCall(name=name, args=args, id=f"call-{len(offers)}")
                part = types.Part(function_call=call)
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    return Scripted()


class Agent:
    """One ADK agent and its session; :meth:`invoke` is one invocation (one user message)."""

    def __init__(self, toolset: Any) -> None:
        from google.adk.agents import LlmAgent
        from google.adk.runners import InMemoryRunner

        self.offers: list[set[str]] = []
        self.model = _model(self.offers)
        self.toolset = toolset
        agent = LlmAgent(name="agent", model=self.model, tools=[toolset])
        self.runner = InMemoryRunner(agent=agent, app_name="matrix")

    async def invoke(self, steps: Steps) -> None:
        from google.genai import types

        script: Iterator[tuple[str, dict[str, Any]]] = iter(steps)
        self.model.script = script
        session = await self.runner.session_service.create_session(app_name="matrix", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text="go")])
        async for _ in self.runner.run_async(
            user_id="u", session_id=session.id, new_message=message
        ):
            pass

    async def close(self) -> None:
        await self.toolset.close()


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_healthy_and_is_error_calls(
    transport: str, verdicts: Pipeline, changing_url: str
) -> None:
    with anyio.fail_after(120):
        agent = Agent(_toolset(transport, changing_url + "/mcp"))
        try:
            await agent.invoke([("create_ticket", {"title": "t"}), ("fail", {})])
        finally:
            await agent.close()
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert calls(verdicts) == [
        ("tools/call create_ticket", "healthy", "ok"),
        ("tools/call fail", "tool_failed", "is_error"),
    ]
    # one listing per invocation
    assert_installed_once(verdicts)


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("ttl", [None, 300.0], ids=["default", "ttl-cache"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_change_is_seen_at_the_next_invocation(
    transport: str, ttl: float | None, verdicts: Pipeline, changing_url: str
) -> None:
    """The invocation that changed the catalog keeps its tools: its next call is stale. The next
    invocation lists again (default) and converges, unless the TTL cache holds the old list."""
    with anyio.fail_after(120):
        agent = Agent(_toolset(transport, changing_url + "/mcp", tool_list_cache_ttl_seconds=ttl))
        try:
            await agent.invoke([("trigger_change", {}), ("create_ticket", {"title": "t"})])
            await agent.invoke([("create_ticket", {"title": "t"})])
        finally:
            await agent.close()
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    stale = ("tools/call create_ticket", "stale_catalog", "catalog_signal_after_discovery")
    after = stale if ttl else ("tools/call create_ticket", "healthy", "ok")
    assert calls(verdicts)[1:] == [stale, after]
    assert ("added_tool" in agent.offers[-1]) is (ttl is None)
    if ttl is None:
        install = verdicts.named(A.INSTALL_SPAN_NAME)[-1].attributes or {}
        assert install[A.CATALOG_VERDICT] == "converged"


async def test_a_401_at_connect_is_one_needs_auth(verdicts: Pipeline, reference_url: str) -> None:
    """ADK raises nothing: it drops the toolset ("no tools") and the model answers."""
    with anyio.fail_after(60):
        agent = Agent(_toolset("http", reference_url + "/authn"))
        try:
            await agent.invoke([])
        finally:
            await agent.close()
    assert agent.offers == [set()]
    handshakes = [s for s in verdicts.spans() if s.name in ("server/discover", "initialize")]
    # plain initialize (no era probe); ADK's retry_on_errors connects once more: one incident
    assert [(s.name, (s.attributes or {}).get(A.VERDICT)) for s in handshakes] == [
        ("initialize", "needs_auth"),
        ("initialize", "needs_auth"),
    ]
    assert verdicts.counts(A.METRIC_INCIDENTS, A.VERDICT) == {"needs_auth": 1}


# ---- filtered installs: what the model is offered, mapped back to the MCP definitions ----------
SUBSET = {"create_ticket", "fail"}


@pytest.fixture(scope="module")
def changing_tools() -> list[dict[str, Any]]:
    """``changing_server.py``'s catalog before any change, as it lists it (wire dicts)."""
    return listed_tools(str(CHANGING_SERVER), "stdio")


def _in_subset(tool: Any, readonly_context: Any = None) -> bool:
    return bool(tool.name in SUBSET)


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("tool_filter", [sorted(SUBSET), _in_subset], ids=["names", "predicate"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_tool_filter_installs_the_subset_the_model_is_offered(
    transport: str,
    tool_filter: Any,
    verdicts: Pipeline,
    changing_url: str,
    changing_tools: list[dict[str, Any]],
) -> None:
    """``tool_filter`` (names or a predicate) with ``tool_name_prefix``: the model is offered two
    prefixed tools of three, the wire carries the MCP name, the install is the two definitions."""
    with anyio.fail_after(120):
        toolset = _toolset(
            transport, changing_url + "/mcp", tool_filter=tool_filter, tool_name_prefix="jira"
        )
        agent = Agent(toolset)
        try:
            await agent.invoke([("jira_create_ticket", {"title": "t"})])
        finally:
            await agent.close()
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert agent.offers == [{"jira_create_ticket", "jira_fail"}] * 2
    assert_installed(verdicts, changing_tools, SUBSET)
    # a subset of byte-equal definitions is the converged catalog, and the call healthy
    assert_judged(verdicts, "converged", "ok")
    assert calls(verdicts) == [("tools/call create_ticket", "healthy", "ok")]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_tool_filter_that_hides_every_tool_is_not_converged(
    transport: str, verdicts: Pipeline, changing_url: str, changing_tools: list[dict[str, Any]]
) -> None:
    """A predicate that keeps nothing offers the model nothing: the install is empty, and the
    catalog the agent holds is not the converged one the server listed."""
    with anyio.fail_after(120):
        toolset = _toolset(transport, changing_url + "/mcp", tool_filter=lambda tool, ctx: False)
        agent = Agent(toolset)
        try:
            await agent.invoke([])
        finally:
            await agent.close()
    assert agent.offers == [set()]
    assert_installed(verdicts, changing_tools, set())
    assert_judged(verdicts, "stale", "nothing_installed")
