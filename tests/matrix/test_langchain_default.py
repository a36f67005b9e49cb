"""LangChain agents (langchain-mcp-adapters + langgraph): the framework's real agent loop.

``create_react_agent`` runs its graph with a scripted chat model (no LLM): each turn the model
asks for one tool call, the graph runs the tool, and the model's next turn reads the result.
The tools come from ``MultiServerMCPClient(...).get_tools()``, LangChain's documented default:
they are listed in one session and each call runs in a fresh one. Every call is judged against
the server's discovery (docs/model.md#scope) and against what ``get_tools()`` handed the agent
(the framework hook's install, docs/frameworks.md). Collected on the cells that install
langchain-mcp-adapters (it pins ``mcp < 2``: ``mcp_latest_1x`` of noxfile.py, with langgraph).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tests.support.framework_cells import calls as framework_calls
from tests.support.matrix_drivers import (
    CHANGING_SERVER,
    SERVER_PYTHON,
    STDIO_SERVER,
    assert_installed_once,
)
from tests.support.processor_helpers import Pipeline, instrumenting

from otel_mcp_health import attributes as A
from otel_mcp_health.environment_variables import (
    OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S as MAX_AGE,
)
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio


def calls(pipeline: Pipeline) -> list[tuple[Any, ...]]:
    """The calls in start order, each with whether it inherited another session's discovery."""
    return framework_calls(pipeline, A.CATALOG_INHERITED)


def _connection(transport: str, url: str, script: str = STDIO_SERVER) -> dict[str, Any]:
    if transport == "stdio":
        args = [script, "stdio"] if script == str(CHANGING_SERVER) else [script]
        return {"transport": "stdio", "command": SERVER_PYTHON, "args": args}
    return {"transport": "streamable_http", "url": url}


async def _run_agent(tools: list[Any], steps: list[tuple[str, dict[str, Any]]]) -> None:
    """langgraph's ReAct agent, its model scripted to call ``steps`` in order, then answer."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph.prebuilt import create_react_agent

    class ScriptedModel(GenericFakeChatModel):
        """langchain's fake chat model, accepting ``bind_tools`` (the ReAct agent binds its tools;
        the replies are scripted regardless)."""

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    replies = [
        AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{i}"}])
        for i, (name, args) in enumerate(steps)
    ]
    model = ScriptedModel(messages=iter([*replies, AIMessage(content="done")]))
    agent = create_react_agent(model, tools)
    await agent.ainvoke({"messages": [("user", "go")]})


async def _get_tools(connection: dict[str, Any]) -> list[Any]:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    return await MultiServerMCPClient({"server": connection}).get_tools()  # type: ignore[dict-item]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_healthy_and_is_error_calls(
    transport: str, verdicts: Pipeline, reference_url: str
) -> None:
    with anyio.fail_after(120):
        tools = await _get_tools(_connection(transport, reference_url + "/mcp"))
        steps = [("create_ticket", {"title": "t", "priority": "p"}), ("fail", {})]
        await _run_agent(tools, steps)
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert calls(verdicts) == [
        ("tools/call create_ticket", "healthy", "ok", True),
        ("tools/call fail", "tool_failed", "is_error", True),
    ]
    # the framework hook recorded what get_tools() handed the agent, against the server
    assert_installed_once(verdicts, tool_count=len(tools))


@pytest.mark.usefixtures("create_ticket_verified")
async def test_fifty_get_tools_leave_no_session(verdicts: Pipeline, reference_url: str) -> None:
    """``get_tools()`` per request: each lists in a session of its own and installs after that
    session closed. The installs attach to the server and never bring their session back (the
    processor kept every one for an hour and filled its LRU), and the server's catalog still
    reads ``converged`` for the agent's next call."""
    connection = _connection("http", reference_url + "/mcp")
    with anyio.fail_after(180):
        for _ in range(50):
            tools = await _get_tools(connection)
        assert len(verdicts.processor._engine.sessions) == 0
        await _run_agent(tools, [("create_ticket", {"title": "t", "priority": "p"})])
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert len(verdicts.processor._engine.sessions) == 0
    installs = verdicts.named(A.INSTALL_SPAN_NAME)
    assert len(installs) == 50
    assert {(s.attributes or {}).get(A.CATALOG_VERDICT) for s in installs} == {"converged"}
    assert calls(verdicts) == [("tools/call create_ticket", "healthy", "ok", True)]
    call = verdicts.last("tools/call create_ticket").attributes or {}
    assert (call[A.CATALOG_VERDICT], call[A.CATALOG_CLIENT_SOURCE]) == ("converged", "digest")


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_change_the_agent_never_sees_is_stale(
    transport: str, verdicts: Pipeline, changing_url: str
) -> None:
    """LangChain binds the tools when the graph is built and ignores ``list_changed``: after the
    server adds a tool, the agent's next call runs on the old catalog."""
    with anyio.fail_after(120):
        connection = _connection(transport, changing_url + "/mcp", str(CHANGING_SERVER))
        tools = await _get_tools(connection)
        await _run_agent(tools, [("trigger_change", {}), ("create_ticket", {"title": "t"})])
    assert calls(verdicts)[-1] == (
        "tools/call create_ticket",
        "stale_catalog",
        "catalog_signal_after_discovery",
        True,
    )


async def test_a_401_at_connect_is_one_needs_auth(verdicts: Pipeline, reference_url: str) -> None:
    with anyio.fail_after(60), pytest.raises(Exception):  # noqa: B017, PT011  # the adapter's own
        await _get_tools(_connection("http", reference_url + "/authn"))
    handshakes = [s for s in verdicts.spans() if s.name == "initialize"]
    assert [(s.attributes or {}).get(A.VERDICT) for s in handshakes] == ["needs_auth"]
    assert verdicts.counts(A.METRIC_INCIDENTS, A.VERDICT) == {"needs_auth": 1}


#: A maximum age short enough for an agent of this cell to live past it, long enough for its
#: first call to come before it (over stdio every call starts the server process anew).
SHORT_MAX_AGE_S = {"stdio": 5.0, "http": 1.0}


@pytest.fixture
def short_max_age(monkeypatch: pytest.MonkeyPatch, transport: str) -> Iterator[Pipeline]:
    """The instrumented agent judged by a processor configured (by its environment variable)
    with a maximum age of seconds."""
    monkeypatch.setenv(MAX_AGE, str(SHORT_MAX_AGE_S[transport]))
    pipeline = Pipeline.build()
    try:
        with instrumenting(pipeline):
            yield pipeline
    finally:
        pipeline.provider.shutdown()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_long_running_agent_reads_refresh_overdue_until_it_lists_again(
    transport: str, short_max_age: Pipeline, reference_url: str
) -> None:
    """What a LangChain-default agent sees when it lives past the maximum age (docs/frameworks.md):
    ``get_tools()`` lists in a session that closes at once and every call runs in a fresh one, so
    no session stays open to hear ``list_changed``. Once the listing is older than the maximum
    age every call reads ``stale_catalog`` / ``catalog_refresh_overdue`` (the agent never
    re-lists; nothing changed); calling ``get_tools()`` again converges."""
    connection = _connection(transport, reference_url + "/mcp")
    with anyio.fail_after(120):
        tools = await _get_tools(connection)
        await _run_agent(tools, [("lookup", {})])
        await anyio.sleep(SHORT_MAX_AGE_S[transport] + 0.3)
        await _run_agent(tools, [("lookup", {}), ("lookup", {})])
        await _run_agent(await _get_tools(connection), [("lookup", {})])
    fresh = ("tools/call lookup", "unverified", "no_outcome_verifier", True)
    overdue = ("tools/call lookup", "stale_catalog", "catalog_refresh_overdue", True)
    assert calls(short_max_age) == [fresh, overdue, overdue, fresh]
    catalog = [
        ((s.attributes or {})[A.CATALOG_VERDICT], (s.attributes or {})[A.CATALOG_REASON])
        for s in short_max_age.named("tools/call lookup")
    ]
    assert catalog[1:3] == [("stale", "refresh_overdue")] * 2


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_an_agent_on_one_open_session_stays_converged_past_the_maximum_age(
    transport: str, short_max_age: Pipeline, reference_url: str
) -> None:
    """The explicit form, ``async with client.session(name) as s: load_mcp_tools(s)``, keeps one
    session open for the agent's life: it can hear ``list_changed`` (stdio while it runs, HTTP
    while its GET stream is attached), so its catalog is not held to the maximum age."""
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools

    connection = _connection(transport, reference_url + "/mcp")
    client = MultiServerMCPClient({"server": connection})  # type: ignore[dict-item]
    with anyio.fail_after(120):
        async with client.session("server") as session:
            tools = await load_mcp_tools(session)
            await anyio.sleep(SHORT_MAX_AGE_S[transport] + 0.3)
            await _run_agent(tools, [("lookup", {})])
    assert calls(short_max_age) == [
        ("tools/call lookup", "unverified", "no_outcome_verifier", None)
    ]
