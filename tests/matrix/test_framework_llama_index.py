"""llama-index's ``FunctionAgent`` over ``McpToolSpec`` + ``BasicMCPClient``, with core's shipped
``MockFunctionCallingLLM`` scripted to call one tool per step.

``BasicMCPClient`` (the documented default) opens a new session for every operation: the tools
are listed in one (``to_tool_list_async``, the framework hook's install) and each call runs in a
fresh one, which inherits the server's discovery (docs/model.md#scope). Every cell runs over
stdio (a server process per session) and streamable HTTP: healthy, ``isError``, a catalog change
(llama-index lists once and ignores ``list_changed``: the next call is stale; it has no refresh
option), a paginated catalog (it lists the first page only) and a 401 at connect (HTTP only).
Collected where llama-index-tools-mcp is installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tests.support.framework_cells import assert_installed, assert_judged, listed_tools
from tests.support.framework_cells import calls as framework_calls
from tests.support.matrix_drivers import (
    CHANGING_SERVER,
    SERVER_PYTHON,
    STDIO_SERVER,
    assert_installed_once,
)
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio

TRANSPORTS = ["stdio", "http"]
TICKET = {"title": "t", "priority": "p"}
CHANGING = [str(CHANGING_SERVER), "stdio"]
#: The reference server's first page of tools (tests/integration/mcp_health_servers.py).
PAGE_ONE = {"create_ticket", "fail", "bad_args", "trigger_change", "crash", "ask"}


def _client(transport: str, url: str, script: list[str]) -> Any:
    from llama_index.tools.mcp import BasicMCPClient

    if transport == "stdio":
        return BasicMCPClient(SERVER_PYTHON, args=script)
    return BasicMCPClient(url + "/mcp")


async def _tools(transport: str, url: str, script: list[str], **options: Any) -> list[Any]:
    """The agent's tools from ``McpToolSpec`` (``options``: its filters)."""
    from llama_index.tools.mcp import McpToolSpec

    spec = McpToolSpec(client=_client(transport, url, script), **options)
    return await spec.to_tool_list_async()


def _llm(steps: list[tuple[str, dict[str, Any]]], offers: list[set[str]]) -> Any:
    """One tool call per model request, then text; records the tool names each request offered."""
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    script: Iterator[tuple[str, dict[str, Any]]] = iter(steps)

    def respond(messages: Any, **kwargs: Any) -> Any:
        offers.append({tool.metadata.name for tool in kwargs.get("tools") or []})
        step = next(script, None)
        if step is None:
            return ChatMessage(role=MessageRole.ASSISTANT, content="done")
        name, args = step
        block = ToolCallBlock(tool_call_id=f"call-{len(offers)}", tool_name=name, tool_kwargs=args)
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])

    return MockFunctionCallingLLM(response_generator=respond)


async def _run(tools: list[Any], steps: list[tuple[str, dict[str, Any]]]) -> list[set[str]]:
    from llama_index.core.agent.workflow import FunctionAgent

    offers: list[set[str]] = []
    agent = FunctionAgent(tools=tools, llm=_llm(steps, offers))
    result = await agent.run(user_msg="go")
    assert "done" in str(result)
    return offers


def calls(pipeline: Pipeline) -> list[tuple[Any, ...]]:
    """The calls in start order, each with whether it inherited another session's discovery."""
    return framework_calls(pipeline, A.CATALOG_INHERITED)


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_healthy_and_is_error_calls(
    transport: str, verdicts: Pipeline, changing_url: str
) -> None:
    with anyio.fail_after(120):
        tools = await _tools(transport, changing_url, CHANGING)
        await _run(tools, [("create_ticket", {"title": "t"}), ("fail", {})])  # isError: output
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert calls(verdicts) == [
        ("tools/call create_ticket", "healthy", "ok", True),
        ("tools/call fail", "tool_failed", "is_error", True),
    ]
    # the hook recorded what to_tool_list_async handed the agent, against the server
    assert_installed_once(verdicts, tool_count=len(tools))


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_only_the_first_page_is_listed(
    transport: str, verdicts: Pipeline, reference_url: str
) -> None:
    """``fetch_tools`` makes one ``tools/list`` and ignores ``nextCursor``: on the reference
    server's two-page catalog the agent gets half the tools and no discovery ever completes: the
    call sessions inherit that unfinished traversal (``incomplete``), so no call is green."""
    with anyio.fail_after(120):
        tools = await _tools(transport, reference_url, [STDIO_SERVER])
        await _run(tools, [("create_ticket", TICKET), ("fail", {})])
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert {tool.metadata.name for tool in tools} == PAGE_ONE
    [install] = verdicts.named(A.INSTALL_SPAN_NAME)
    attrs = install.attributes or {}
    # the abandoned traversal (nextCursor left) is the server's latest: incomplete, never green
    assert (attrs[A.CATALOG_VERDICT], attrs[A.CATALOG_REASON]) == ("incomplete", "cursor_remaining")
    assert attrs[A.CATALOG_CLIENT_TOOL_COUNT] == len(PAGE_ONE)
    assert calls(verdicts) == [
        ("tools/call create_ticket", "stale_catalog", "catalog_cursor_remaining", True),
        ("tools/call fail", "stale_catalog", "catalog_cursor_remaining", True),
    ]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_change_the_agent_never_sees_is_stale(
    transport: str, verdicts: Pipeline, changing_url: str
) -> None:
    """The tools are fixed at ``to_tool_list_async``; the ``list_changed`` heard in the
    ``trigger_change`` session makes the server's catalog stale for the next call's session."""
    with anyio.fail_after(120):
        tools = await _tools(transport, changing_url, CHANGING)
        offers = await _run(tools, [("trigger_change", {}), ("create_ticket", {"title": "t"})])
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert all("added_tool" not in offer for offer in offers)
    assert calls(verdicts)[-1] == (
        "tools/call create_ticket",
        "stale_catalog",
        "catalog_signal_after_discovery",
        True,
    )


async def test_a_401_at_connect_is_one_needs_auth(verdicts: Pipeline, reference_url: str) -> None:
    from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

    spec = McpToolSpec(client=BasicMCPClient(reference_url + "/authn"))
    with anyio.fail_after(60), pytest.raises(Exception):  # noqa: B017, PT011  # the client's own
        await spec.to_tool_list_async()
    handshakes = [s for s in verdicts.spans() if s.name in ("server/discover", "initialize")]
    assert [(s.name, (s.attributes or {}).get(A.VERDICT)) for s in handshakes] == [
        ("initialize", "needs_auth")
    ]
    assert verdicts.counts(A.METRIC_INCIDENTS, A.VERDICT) == {"needs_auth": 1}


# ---- filtered installs: what the model is offered, mapped back to the MCP definitions ----------
SUBSET = {"create_ticket", "fail"}


@pytest.fixture(scope="module")
def changing_tools() -> list[dict[str, Any]]:
    """``changing_server.py``'s catalog before any change, as it lists it (wire dicts)."""
    return listed_tools(*CHANGING)


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_allowed_tools_install_the_subset_the_model_is_offered(
    transport: str, verdicts: Pipeline, changing_url: str, changing_tools: list[dict[str, Any]]
) -> None:
    """``allowed_tools``: the model is offered two of the three tools, the install is those two
    definitions, and the call (in a session of its own) inherits a converged catalog."""
    with anyio.fail_after(120):
        tools = await _tools(transport, changing_url, CHANGING, allowed_tools=sorted(SUBSET))
        offers = await _run(tools, [("create_ticket", {"title": "t"})])
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert offers == [SUBSET, SUBSET]
    assert_installed(verdicts, changing_tools, SUBSET)
    # a subset of byte-equal definitions is the converged catalog, and the call healthy
    assert_judged(verdicts, "converged", "ok")
    assert calls(verdicts) == [("tools/call create_ticket", "healthy", "ok", True)]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_empty_allowed_tools_is_not_converged(
    transport: str, verdicts: Pipeline, changing_url: str, changing_tools: list[dict[str, Any]]
) -> None:
    """``allowed_tools=[]`` keeps nothing (llama-index warns): the install is empty, and the
    catalog the agent holds is not the converged one the server listed."""
    with anyio.fail_after(120):
        tools = await _tools(transport, changing_url, CHANGING, allowed_tools=[])
        offers = await _run(tools, [])
    assert offers == [set()]
    assert_installed(verdicts, changing_tools, set())
    assert_judged(verdicts, "stale", "nothing_installed")
