"""openai-agents' own run loop (``Runner.run``) over its MCP servers, with a scripted ``Model``.

The model is an ``agents.Model`` subclass that answers each turn with one function call, then a
text message; the agent runs for real: ``async with MCPServerStdio(...)`` /
``MCPServerStreamableHttp(...)`` opens the one session, and every turn of ``Runner.run`` lists the
server (unless ``cache_tools_list=True``), converts the tools
(``MCPUtil._convert_mcp_tools_to_function_tools``, the framework hook's install), offers them to
the model and calls the one it picked. Every cell runs over stdio and streamable HTTP and asserts
the verdict of the call it is about. Collected where openai-agents is installed; it runs on both
SDK lines (mcp 2.x: ``mcp.Client(mode="auto")``, the 2026-07-28 era; mcp 1.x: ``initialize``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tests.support.framework_cells import assert_installed, assert_judged, calls, listed_tools
from tests.support.matrix_drivers import (
    CHANGING_SERVER,
    INTEGRATION,
    MCP_MAJOR,
    SERVER_PYTHON,
    STDIO_SERVER,
    http_server,
)
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio

TRANSPORTS = ["stdio", "http"]
HANDSHAKES = ("server/discover", "initialize")
TICKET = {"title": "t", "priority": "p"}
REFERENCE = [STDIO_SERVER]
CHANGING = [str(CHANGING_SERVER), "stdio"]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OpenAI tracing exporter and no real key: the model is scripted."""
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")


def _scripted(steps: list[tuple[str, dict[str, Any]]], offers: list[set[str]]) -> Any:
    """An ``agents.Model`` that calls ``steps`` one per turn, then answers ``done``."""
    from agents import Model, ModelResponse, Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    script: Iterator[tuple[str, dict[str, Any]]] = iter(steps)

    class Scripted(Model):  # type: ignore[misc]
        """A ``Model`` that answers with the next scripted function call, then the message "done";
        it records the tool names each request offered. ``Runner.run`` only: it does not stream."""

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            tools = kwargs["tools"] if "tools" in kwargs else args[3]
            offers.append({tool.name for tool in tools})
            step, n = next(script, None), len(offers)
            if step is None:
                text = ResponseOutputText(type="output_text", text="done", annotations=[])
                message = ResponseOutputMessage(
                    id=f"msg-{n}", type="message", role="assistant", status="completed",
                    content=[text],
                )  # fmt: skip
                return ModelResponse(output=[message], usage=Usage(), response_id=None)
            name, arguments = step
            call = ResponseFunctionToolCall(
                type="function_call", name=name, arguments=json.dumps(arguments),
                call_id=f"call-{n}", id=f"fc-{n}",
            )  # fmt: skip
            return ModelResponse(output=[call], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError  # Runner.run only

    return Scripted()


def _server(transport: str, url: str, script: list[str], **options: Any) -> Any:
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp

    if transport == "stdio":
        return MCPServerStdio({"command": SERVER_PYTHON, "args": script}, **options)
    return MCPServerStreamableHttp({"url": url + "/mcp"}, **options)


def _hooks() -> Any:
    """Run hooks that wait for the outcome verifiers after each tool, before the next turn.

    A verified call's span stays open until its receipt, and its catalog is judged then: a
    ``tools/list`` the next turn began meanwhile reads as the call's unfinished traversal
    (``stale_catalog`` / ``catalog_cursor_remaining`` on a loaded machine). Waiting keeps each
    cell about its own call."""
    from agents import RunHooks

    class Verified(RunHooks):  # type: ignore[misc]
        """Hooks whose ``on_tool_end`` asserts that every outcome receipt arrived within 10 s."""

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            assert await anyio.to_thread.run_sync(flush_receipts, 10.0)

    return Verified()


async def _run(
    server: Any, steps: list[tuple[str, dict[str, Any]]], **options: Any
) -> list[set[str]]:
    """One ``Runner.run`` of an agent (``options``: more ``Agent`` arguments) over ``server``
    (connected here, as the app does)."""
    from agents import Agent, Runner

    offers: list[set[str]] = []
    with anyio.fail_after(120):
        async with server:
            model = _scripted(steps, offers)
            agent = Agent(name="a", model=model, mcp_servers=[server], **options)
            result = await Runner.run(agent, "go", hooks=_hooks())
        assert result.final_output == "done"
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    return offers


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_healthy_and_is_error_calls(
    transport: str, verdicts: Pipeline, reference_url: str
) -> None:
    # isError comes back to the model as the tool's output (the run goes on)
    server = _server(transport, reference_url, REFERENCE)
    offers = await _run(server, [("create_ticket", TICKET), ("fail", {})])
    assert {"create_ticket", "fail"} <= offers[0]
    assert calls(verdicts) == [
        ("tools/call create_ticket", "healthy", "ok"),
        ("tools/call fail", "tool_failed", "is_error"),
    ]
    # one install per turn (the default lists at every turn), each judged against the server
    installs = verdicts.named(A.INSTALL_SPAN_NAME)
    assert len(installs) == len(offers) == 3
    assert {(s.attributes or {}).get(A.CATALOG_VERDICT) for s in installs} == {"converged"}
    assert all(A.SERVER_TARGET_KEY in (s.attributes or {}) for s in installs)
    call = verdicts.last("tools/call create_ticket").attributes or {}
    assert call[A.CATALOG_CLIENT_SOURCE] == "digest"  # judged against what was installed


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_by_default_every_turn_installs_the_new_catalog(
    transport: str, verdicts: Pipeline, changing_url: str
) -> None:
    """``cache_tools_list=False`` (the default) lists at every turn: the turn after the change
    offers ``added_tool``, and what was installed is what was discovered."""
    server = _server(transport, changing_url, CHANGING)
    offers = await _run(server, [("trigger_change", {}), ("create_ticket", {"title": "t"})])
    assert "added_tool" not in offers[0]
    assert "added_tool" in offers[1]
    assert calls(verdicts)[-1] == ("tools/call create_ticket", "healthy", "ok")
    call = verdicts.last("tools/call create_ticket").attributes or {}
    assert (call[A.CATALOG_VERDICT], call[A.CATALOG_CLIENT_SOURCE]) == ("converged", "digest")


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_cached_tools_list_keeps_the_old_catalog(
    transport: str, verdicts: Pipeline, changing_url: str
) -> None:
    """``cache_tools_list=True`` lists once and reinstalls that list at every turn; only
    ``invalidate_tools_cache()`` refreshes it. On mcp 1.x (``initialize``) the server's
    ``list_changed`` arrives and the next call is stale. On mcp 2.x the client negotiates the
    2026-07-28 era (``server/discover``) and opens no ``subscriptions/listen``: no signal reaches
    it, so the call is judged on the catalog discovered at connect within the bounded refresh
    policy (300 s; ``changing_server.py`` advertises no ``tools.listChanged`` at that era)."""
    server = _server(transport, changing_url, CHANGING, cache_tools_list=True)
    offers = await _run(server, [("trigger_change", {}), ("create_ticket", {"title": "t"})])
    assert all("added_tool" not in offer for offer in offers)
    handshakes = [s.name for s in verdicts.spans() if s.name in HANDSHAKES]
    if MCP_MAJOR == 1:
        assert handshakes == ["initialize"]
        assert calls(verdicts)[-1] == (
            "tools/call create_ticket",
            "stale_catalog",
            "catalog_signal_after_discovery",
        )
    else:
        assert handshakes == ["server/discover"]
        assert not verdicts.named("notifications/")
        assert calls(verdicts)[-1] == ("tools/call create_ticket", "healthy", "ok")
        call = verdicts.last("tools/call create_ticket").attributes or {}
        assert (call[A.CATALOG_VERDICT], call[A.CATALOG_MAX_AGE_S]) == ("converged", 300.0)


async def test_a_401_at_connect_is_one_needs_auth(verdicts: Pipeline, reference_url: str) -> None:
    from agents.mcp import MCPServerStreamableHttp

    server = MCPServerStreamableHttp({"url": reference_url + "/authn"})
    with anyio.fail_after(60), pytest.raises(Exception):  # noqa: B017, PT011  # the SDK's own
        await _run(server, [("create_ticket", TICKET)])
    handshakes = [s for s in verdicts.spans() if s.name in HANDSHAKES]
    expected = [("initialize", "needs_auth")]
    if MCP_MAJOR >= 2:  # the era probe answered 401 too; the initialize after it reads needs_auth
        expected.insert(0, ("server/discover", None))
    assert [(s.name, (s.attributes or {}).get(A.VERDICT)) for s in handshakes] == expected
    assert verdicts.counts(A.METRIC_INCIDENTS, A.VERDICT) == {"needs_auth": 1}


# ---- filtered installs: what the model is offered, mapped back to the MCP definitions ----------
SUBSET = {"create_ticket", "fail"}


@pytest.fixture(scope="module")
def reference_tools() -> list[dict[str, Any]]:
    """The reference server's catalog as it lists it (every page, wire dicts)."""
    return listed_tools(*REFERENCE)


def _only_the_subset(context: Any, tool: Any) -> bool:
    return bool(tool.name in SUBSET)


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_static_tool_filter_installs_the_subset_the_model_is_offered(
    transport: str, verdicts: Pipeline, reference_url: str, reference_tools: list[dict[str, Any]]
) -> None:
    """``tool_filter={"allowed_tool_names": ...}``: every turn offers the model two of the twelve
    tools and installs those two definitions."""
    allowed = {"allowed_tool_names": sorted(SUBSET)}
    server = _server(transport, reference_url, REFERENCE, tool_filter=allowed)
    offers = await _run(server, [("create_ticket", TICKET)])
    assert offers == [SUBSET, SUBSET]
    assert len(verdicts.named(A.INSTALL_SPAN_NAME)) == len(offers)
    assert_installed(verdicts, reference_tools, SUBSET)
    # a subset of byte-equal definitions is the converged catalog, and the call healthy
    assert_judged(verdicts, "converged", "ok")
    assert calls(verdicts) == [("tools/call create_ticket", "healthy", "ok")]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_callable_tool_filter_with_server_names_maps_back_to_the_mcp_definitions(
    transport: str, verdicts: Pipeline, reference_url: str, reference_tools: list[dict[str, Any]]
) -> None:
    """A callable ``tool_filter`` and ``include_server_in_tool_names``: the model is offered
    ``mcp_jira__create_ticket``, the wire carries ``create_ticket``, the install is the subset's
    MCP definitions."""
    server = _server(transport, reference_url, REFERENCE, tool_filter=_only_the_subset, name="jira")
    config = {"include_server_in_tool_names": True}
    offers = await _run(server, [("mcp_jira__create_ticket", TICKET)], mcp_config=config)
    assert offers[0] == {"mcp_jira__create_ticket", "mcp_jira__fail"}
    assert [name for name, *_ in calls(verdicts)] == ["tools/call create_ticket"]
    assert_installed(verdicts, reference_tools, SUBSET)
    # a subset of byte-equal definitions is the converged catalog, and the call healthy
    assert_judged(verdicts, "converged", "ok")
    assert calls(verdicts) == [("tools/call create_ticket", "healthy", "ok")]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_tool_filter_that_hides_every_tool_is_not_converged(
    transport: str, verdicts: Pipeline, reference_url: str, reference_tools: list[dict[str, Any]]
) -> None:
    """A filter that keeps nothing offers the model nothing: the install is empty, and the catalog
    the agent holds is not the converged one the server listed."""
    server = _server(transport, reference_url, REFERENCE, tool_filter={"allowed_tool_names": []})
    offers = await _run(server, [])
    assert offers == [set()]
    assert_installed(verdicts, reference_tools, set())
    assert_judged(verdicts, "stale", "nothing_installed")


# ---- SSE (MCPServerSse): a network transport like streamable HTTP (docs/model.md#server-identity)
@pytest.fixture(scope="module")
def sse_gateway() -> Iterator[str]:
    """``gateway_http.py``: an SSE server and refusing SSE endpoints on 127.0.0.1."""
    with http_server(str(INTEGRATION / "gateway_http.py"), "unused") as url:
        yield url


@pytest.mark.usefixtures("create_ticket_verified")
async def test_an_sse_agent_is_judged_as_a_network_agent(
    verdicts: Pipeline, sse_gateway: str
) -> None:
    from agents.mcp import MCPServerSse

    await _run(
        MCPServerSse({"url": sse_gateway + "/sse"}), [("create_ticket", TICKET), ("fail", {})]
    )
    assert calls(verdicts) == [
        ("tools/call create_ticket", "healthy", "ok"),
        ("tools/call fail", "tool_failed", "is_error"),
    ]
    host, port = sse_gateway.removeprefix("http://").split(":")
    call = verdicts.last("tools/call create_ticket").attributes or {}
    assert (call[A.NETWORK_TRANSPORT], call[A.SERVER_ADDRESS]) == ("tcp", host)
    assert call[A.SERVER_PORT] == int(port)
    assert call[A.layer_attribute("authorization")] == "passed"


async def test_a_refused_sse_connect_is_one_needs_auth(
    verdicts: Pipeline, sse_gateway: str
) -> None:
    from agents.mcp import MCPServerSse

    server = MCPServerSse({"url": sse_gateway + "/sse-authz"})
    with anyio.fail_after(60), pytest.raises(Exception):  # noqa: B017, PT011  # the SDK's own
        await _run(server, [("create_ticket", TICKET)])
    connects = [dict(s.attributes or {}) for s in verdicts.named(A.CONNECT_SPAN_NAME)]
    assert [(a[A.VERDICT], a[A.NEXT_ACTION]) for a in connects] == [("needs_auth", "request_scope")]
    assert verdicts.counts(A.METRIC_INCIDENTS, A.VERDICT) == {"needs_auth": 1}
