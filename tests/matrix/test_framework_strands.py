"""strands-agents' own agent loop over an ``MCPClient``, with a scripted ``Model`` subclass.

The model is scripted (one tool call per model request, Bedrock-style stream events, then a text
answer) and the agent runs for real: ``Agent(tools=[client])`` starts the client's session on its
background thread, lists the tools and registers them (``ToolRegistry.process_tools``, the
framework hook's install); every invocation then calls them through that one session. Every cell
runs over stdio and streamable HTTP and asserts the verdict of the call it is about. Collected
where strands-agents is installed (it pins ``mcp < 2.2``: mcp 2.1.x).

Strands negotiates with ``negotiate_auto``: against the project's mcp 2.x servers that is the
2026-07-28 era (``server/discover``), where a server announces a change only on a
``subscriptions/listen`` stream the client opened, and strands opens one only with
``on_tools_changed``. ``changing_server.py`` serves no such stream (it advertises no
``tools.listChanged`` at that era, and strands with ``on_tools_changed`` fails to start against
it: ``subscriptions/listen`` answers -32601), so the refresh cells run against
``LISTENING_SERVER``, the same server with the stream. No cell here hears an unsolicited
``list_changed`` (the ``initialize`` era): no server of the project speaks only that era.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest
from tests.support.framework_cells import (
    assert_installed,
    assert_judged,
    calls,
    in_thread,
    listed_tools,
)
from tests.support.matrix_drivers import (
    CHANGING_SERVER,
    SERVER_PYTHON,
    STDIO_SERVER,
    assert_installed_once,
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
#: ``changing_server.py`` that also serves the 2026-07-28 ``subscriptions/listen`` and publishes
#: its change there: at that era a server announces changes only on a stream the client opened.
LISTENING_SERVER = CHANGING_SERVER.with_name("listening_server.py")
LISTENING = [str(LISTENING_SERVER), "stdio"]
#: A step the model takes: a tool call, optionally after waiting for an event (model latency).
Step = tuple[str, dict[str, Any], threading.Event | None]


def _scripted(steps: list[Step], offers: list[set[str]]) -> Any:
    """A ``strands.models.model.Model`` that calls ``steps`` one per request, then answers."""
    from strands.models.model import Model

    script: Iterator[Step] = iter(steps)

    class Scripted(Model):  # type: ignore[misc]
        """A strands ``Model`` whose ``stream`` emits the next scripted tool use (after waiting for
        the step's gate, if it has one), then the text "done"; it records the tool names each
        request offered."""

        def update_config(self, **model_config: Any) -> None:
            return None

        def get_config(self) -> Any:
            return {}

        async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            raise NotImplementedError
            yield  # pragma: no cover

        async def stream(
            self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kw: Any
        ) -> AsyncIterator[dict[str, Any]]:
            offers.append({spec["name"] for spec in tool_specs or []})
            step = next(script, None)
            yield {"messageStart": {"role": "assistant"}}
            if step is None:
                yield {"contentBlockDelta": {"delta": {"text": "done"}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "end_turn"}}
                return
            name, args, gate = step
            if gate is not None:  # the model thinks until the client has seen the change
                assert await asyncio.to_thread(gate.wait, 30)
            tool_use = {"name": name, "toolUseId": f"call-{len(offers)}"}
            yield {"contentBlockStart": {"start": {"toolUse": tool_use}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}

    return Scripted()


def _client(transport: str, url: str, script: list[str], **options: Any) -> Any:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client
    from strands.tools.mcp import MCPClient

    if transport == "stdio":
        params = StdioServerParameters(command=SERVER_PYTHON, args=script)
        return MCPClient(lambda: stdio_client(params), **options)
    return MCPClient(url=url + "/mcp", **options)


@contextmanager
def _agent(client: Any, steps: list[Step]) -> Iterator[tuple[Any, list[set[str]]]]:
    """``Agent(tools=[client])``: the client starts (and lists) while the agent is built."""
    from strands import Agent

    offers: list[set[str]] = []
    agent = Agent(model=_scripted(steps, offers), tools=[client], callback_handler=None)
    try:
        yield agent, offers
    finally:
        agent.cleanup()


async def _in_thread(run: Callable[[], None]) -> None:
    """Strands' sync API (it blocks on its background thread) off the test's event loop; then
    every outcome receipt has arrived (within 10 s)."""
    await in_thread(run)
    assert await anyio.to_thread.run_sync(flush_receipts, 10.0)


@pytest.fixture
def listening_url() -> Iterator[str]:
    """``LISTENING_SERVER`` over streamable HTTP (its own process, fresh per test)."""
    with http_server(*LISTENING[:-1], "http") as url:
        yield url


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_healthy_and_is_error_calls(
    transport: str, verdicts: Pipeline, reference_url: str
) -> None:
    def run() -> None:
        steps: list[Step] = [("create_ticket", TICKET, None), ("fail", {}, None)]
        with _agent(_client(transport, reference_url, REFERENCE), steps) as (agent, offers):
            # isError comes back to the model as a toolResult with status "error"
            assert str(agent("go")).strip() == "done"
        assert {"create_ticket", "fail"} <= offers[0]

    await _in_thread(run)
    assert calls(verdicts) == [
        ("tools/call create_ticket", "healthy", "ok"),
        ("tools/call fail", "tool_failed", "is_error"),
    ]
    # one install (the registry is built once, both pages), judged against the server
    assert_installed_once(verdicts)


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_managed_pattern_installs_one_page(
    transport: str, verdicts: Pipeline, reference_url: str
) -> None:
    """``with client: Agent(tools=client.list_tools_sync())`` (strands' managed pattern) lists
    one page: the agent is handed the first page of a two-page catalog (the hook's install)."""
    from strands import Agent

    def run() -> None:
        client = _client(transport, reference_url, REFERENCE)
        with client:
            tools = client.list_tools_sync()
            assert tools.pagination_token is not None
            model = _scripted([("create_ticket", TICKET, None)], [])
            agent = Agent(model=model, tools=tools, callback_handler=None)
            assert str(agent("go")).strip() == "done"

    await _in_thread(run)
    [install] = verdicts.named(A.INSTALL_SPAN_NAME)
    attrs = install.attributes or {}
    assert (attrs[A.CATALOG_VERDICT], attrs[A.CATALOG_REASON]) == ("incomplete", "cursor_remaining")
    assert calls(verdicts) == [
        ("tools/call create_ticket", "stale_catalog", "catalog_cursor_remaining"),
    ]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("server", ["silent", "listening"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_by_default_a_change_never_reaches_the_agent(
    transport: str, server: str, verdicts: Pipeline, request: pytest.FixtureRequest
) -> None:
    """Strands lists once, when the agent is built, and by default opens no
    ``subscriptions/listen``: at the 2026-07-28 era no change reaches it, whether the server
    serves that stream (``listening``) or not (``silent``, which then advertises no
    ``tools.listChanged``). Nobody heard a signal: the call after the change is judged on the
    catalog discovered at connect, the one the agent installed."""
    url = request.getfixturevalue("listening_url" if server == "listening" else "changing_url")
    script = LISTENING if server == "listening" else CHANGING

    def run() -> None:
        steps: list[Step] = [("trigger_change", {}, None), ("create_ticket", {"title": "t"}, None)]
        with _agent(_client(transport, url, script), steps) as (agent, offers):
            agent("go")
        assert all("added_tool" not in offer for offer in offers)

    await _in_thread(run)
    assert [s.name for s in verdicts.spans() if s.name in HANDSHAKES] == ["server/discover"]
    assert not verdicts.named("notifications/")
    assert calls(verdicts)[-1] == ("tools/call create_ticket", "healthy", "ok")
    call = verdicts.last("tools/call create_ticket").attributes or {}
    assert (call[A.CATALOG_VERDICT], call[A.CATALOG_CLIENT_SOURCE]) == ("converged", "digest")


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_on_tools_changed_refreshes_the_client_not_the_agent(
    transport: str, verdicts: Pipeline, listening_url: str
) -> None:
    """With ``on_tools_changed`` strands re-lists into the client's cache and calls back, but the
    agent's registry keeps the old tools: discovery converges on the new catalog while the model
    is still offered the old one, so the next call reads the mismatch (the hook's install)."""
    refreshed: list[set[str]] = []
    seen = threading.Event()

    def on_tools_changed(previous: list[str], tools: list[Any]) -> None:
        refreshed.append({tool.tool_name for tool in tools})
        seen.set()

    def run() -> None:
        steps: list[Step] = [("trigger_change", {}, None), ("create_ticket", {"title": "t"}, seen)]
        client = _client(transport, listening_url, LISTENING, on_tools_changed=on_tools_changed)
        with _agent(client, steps) as (agent, offers):
            agent("go")
        assert all("added_tool" not in offer for offer in offers)

    await _in_thread(run)
    assert "added_tool" in refreshed[0]  # the client heard the change and re-listed ...
    assert verdicts.named("notifications/tools/list_changed")
    assert len(verdicts.named(A.INSTALL_SPAN_NAME)) == 1  # ... into its cache, not the registry
    assert calls(verdicts)[-1] == (
        "tools/call create_ticket",
        "stale_catalog",
        "catalog_digest_mismatch",
    )
    call = verdicts.last("tools/call create_ticket").attributes or {}
    assert (call[A.CATALOG_VERDICT], call[A.CATALOG_REASON]) == ("stale", "digest_mismatch")


@pytest.mark.filterwarnings("ignore:coroutine 'MCPClient.stop:RuntimeWarning")  # strands' own
async def test_a_401_at_connect_is_one_needs_auth(verdicts: Pipeline, reference_url: str) -> None:
    from strands import Agent
    from strands.tools.mcp import MCPClient

    def run() -> None:
        client = MCPClient(url=reference_url + "/authn")
        with pytest.raises(ValueError, match="Failed to load tool"):  # strands' own
            Agent(model=_scripted([], []), tools=[client], callback_handler=None)

    await _in_thread(run)
    handshakes = [s for s in verdicts.spans() if s.name in HANDSHAKES]
    assert [(s.name, (s.attributes or {}).get(A.VERDICT)) for s in handshakes] == [
        ("server/discover", None),
        ("initialize", "needs_auth"),
    ]
    assert verdicts.counts(A.METRIC_INCIDENTS, A.VERDICT) == {"needs_auth": 1}


# ---- filtered installs: what the model is offered, mapped back to the MCP definitions ----------
SUBSET = {"create_ticket", "fail"}


@pytest.fixture(scope="module")
def reference_tools() -> list[dict[str, Any]]:
    """The reference server's catalog as it lists it (every page, wire dicts)."""
    return listed_tools(*REFERENCE)


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tool_filters_install_the_subset_the_model_is_offered(
    transport: str, verdicts: Pipeline, reference_url: str, reference_tools: list[dict[str, Any]]
) -> None:
    """``tool_filters`` with a ``prefix``: the model is offered two prefixed tools, the wire
    carries the MCP name, and the install is those two MCP definitions."""
    offered = {"jira_create_ticket", "jira_fail"}

    def run() -> None:
        client = _client(
            transport,
            reference_url,
            REFERENCE,
            tool_filters={"allowed": sorted(SUBSET)},
            prefix="jira",
        )
        with _agent(client, [("jira_create_ticket", TICKET, None)]) as (agent, offers):
            assert str(agent("go")).strip() == "done"
        assert offers == [offered, offered]

    await _in_thread(run)
    assert [name for name, *_ in calls(verdicts)] == ["tools/call create_ticket"]
    assert_installed(verdicts, reference_tools, SUBSET)
    # a subset of byte-equal definitions is the converged catalog, and the call healthy
    assert_judged(verdicts, "converged", "ok")
    assert calls(verdicts) == [("tools/call create_ticket", "healthy", "ok")]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tool_filters_that_hide_every_tool_are_not_converged(
    transport: str, verdicts: Pipeline, reference_url: str, reference_tools: list[dict[str, Any]]
) -> None:
    """Filters that keep nothing register no tool: the client's install is empty, and the catalog
    the agent holds is not the converged one the server listed."""

    def run() -> None:
        client = _client(transport, reference_url, REFERENCE, tool_filters={"allowed": []})
        with _agent(client, []) as (agent, offers):
            assert str(agent("go")).strip() == "done"
        assert offers == [set()]

    await _in_thread(run)
    assert_installed(verdicts, reference_tools, set())
    assert_judged(verdicts, "stale", "nothing_installed")
