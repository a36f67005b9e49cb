"""Installs per agent, from the model's own request (docs/model.md#agents).

A real MCP server in its own process over streamable HTTP (``changing_server.py``: a tool really
changes or is added and ``list_changed`` is announced), the real ``mcp.Client`` opening a fresh
session per call as LangChain and llama-index do, the real instrumentation and span processor.
The model requests are what an LLM-client hook hands the instrumentation: the offered tool
definitions, given here directly to ``record_model_request`` (the real LLM clients are exercised
by the framework suites).
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import json
import tracemalloc
from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server import Server
from tests.support.matrix_drivers import CHANGING_SERVER, http_server
from tests.support.processor_helpers import Pipeline, instrumented_pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health import record_installed_tools
from otel_mcp_health.core.bounds import MAX_AGENTS
from otel_mcp_health.core.offered import OfferedTool
from otel_mcp_health.instrumentation import _agents, record_model_request

pytestmark = pytest.mark.anyio


_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
    "required": ["title"],
}


@pytest.fixture
def verdicts() -> Iterator[Pipeline]:
    with instrumented_pipeline() as pipeline:
        yield pipeline


@pytest.fixture
def server() -> Iterator[str]:
    """The changing server that can also edit ``create_ticket`` (``trigger_edit``): its URL."""
    with http_server(str(CHANGING_SERVER), "http", "edit") as url:
        yield url + "/mcp"


@pytest.fixture
def added() -> Iterator[str]:
    """The changing server that only adds a tool (``trigger_change``): its URL."""
    with http_server(str(CHANGING_SERVER), "http") as url:
        yield url + "/mcp"


def offered(tools: Sequence[types.Tool], *, prefix: str = "") -> list[OfferedTool]:
    """What a plain OpenAI loop offers its model: the MCP definitions, names maybe prefixed."""
    return [
        OfferedTool(
            name=prefix + tool.name,
            description=tool.description,
            parameters=json.loads(json.dumps(tool.input_schema)),
        )
        for tool in tools
    ]


async def listed(server: Any) -> list[types.Tool]:
    """A complete discovery, in a session of its own (the session-per-call pattern)."""
    async with Client(server) as client:
        return list((await client.list_tools()).tools)


async def call(server: Any, name: str = "create_ticket") -> None:
    """One call in a fresh session (LangChain's and llama-index's default)."""
    async with Client(server) as client:
        await client.call_tool(name, {"title": "t"})


def calls(pipeline: Pipeline, name: str = "create_ticket") -> list[dict[str, Any]]:
    return [dict(s.attributes or {}) for s in pipeline.named(f"tools/call {name}")]


def judged(attrs: dict[str, Any]) -> tuple[Any, ...]:
    return (
        attrs.get(A.CATALOG_VERDICT),
        attrs.get(A.CATALOG_REASON),
        attrs.get(A.CATALOG_CLIENT_SOURCE),
        attrs.get(A.AGENT_LABEL),
        attrs.get(A.AGENT_TIED),
    )


async def changed(server: Any, trigger: str) -> list[types.Tool]:
    """Change the server's catalog (``trigger_edit`` or ``trigger_change``) and list again."""
    await call(server, trigger)
    return await listed(server)


async def test_a_call_in_the_request_context_is_tied_and_one_outside_it_is_not(
    verdicts: Pipeline, server: str
) -> None:
    tools = await listed(server)
    record_model_request("openai.chat", offered(tools))
    await call(server)  # in the request's context: that agent's call

    async def elsewhere() -> None:
        record_model_request("anthropic.messages", offered(tools))  # its context only

    await asyncio.create_task(elsewhere())
    await asyncio.create_task(call(server))  # a task started from the first agent's context
    await asyncio.to_thread(asyncio.run, call(server))  # a thread started from it
    tied = calls(verdicts)
    assert [judged(a) for a in tied] == [
        ("converged", "ok", "model_request", "openai.chat/0", True),
    ] * 3
    await untied_call(server)
    untied = calls(verdicts)[-1]
    # Both agents offer the tool, both match: the first in label order is named.
    assert judged(untied) == ("converged", "ok", "model_request", "anthropic.messages/0", False)
    assert untied[A.OFFERED_TOOL_COUNT] == len(tools)


async def untied_call(server: Any) -> None:
    """A call from a fresh context (no model request ran there): untied."""
    await asyncio.create_task(call(server), context=contextvars.Context())


async def test_two_agents_sharing_a_server_through_fresh_sessions_each_get_their_verdict(
    verdicts: Pipeline, server: str
) -> None:
    before = await listed(server)
    now = await changed(server, "trigger_edit")  # create_ticket's definition changes
    assert {t.name: t for t in now}["create_ticket"] != {t.name: t for t in before}["create_ticket"]
    old_called, new_installed, done = anyio.Event(), anyio.Event(), anyio.Event()
    labels: dict[str, str] = {}

    # The old agent offers two tools (a filter), create_ticket's definition the old one.
    kept = offered([t for t in before if t.name in {"create_ticket", "fail"}])

    async def old_agent() -> None:
        record_model_request("openai.chat", kept)  # keeps the old definition
        labels["old"] = _agents.AGENT.get().label  # type: ignore[union-attr]
        await call(server)
        old_called.set()
        await new_installed.wait()
        record_model_request("openai.chat", kept)  # its next request, unchanged
        await call(server)
        done.set()

    async def new_agent() -> None:
        await old_called.wait()
        record_model_request("openai.chat", offered(now))
        labels["new"] = _agents.AGENT.get().label  # type: ignore[union-attr]
        await call(server)
        new_installed.set()
        await done.wait()
        await call(server)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(old_agent)
            group.start_soon(new_agent)
    assert labels["old"] != labels["new"]
    by_agent: dict[str, list[tuple[Any, ...]]] = {}
    for attrs in calls(verdicts):
        by_agent.setdefault(attrs[A.AGENT_LABEL], []).append(judged(attrs)[:2])
        assert attrs[A.AGENT_TIED] is True
        if attrs[A.AGENT_LABEL] == labels["old"]:
            assert tuple(attrs[A.OFFERED_CHANGED]) == ("create_ticket",)
            assert "description" in attrs[A.OFFERED_CHANGED_MEMBERS]
    stale = ("stale", "digest_mismatch")
    assert by_agent == {labels["old"]: [stale, stale], labels["new"]: [("converged", "ok")] * 2}


async def test_an_untied_call_is_converged_only_if_every_agent_offering_the_tool_is(
    verdicts: Pipeline, server: str
) -> None:
    before = await listed(server)
    now = await changed(server, "trigger_edit")
    for tools in (now, before, now):  # three agents, each in a context of its own
        contextvars.Context().run(record_model_request, "openai.responses", offered(tools))
    await untied_call(server)
    attrs = calls(verdicts)[-1]
    assert judged(attrs) == (
        "stale",
        "earlier_catalog_offered",  # exactly the catalog before the edit
        "model_request",
        "openai.responses/1",  # the stale one, whatever its place
        False,
    )


async def test_a_filter_is_a_subset_and_application_tools_are_ignored(
    verdicts: Pipeline, server: str
) -> None:
    tools = await listed(server)
    ticket = [t for t in tools if t.name == "create_ticket"]
    own = OfferedTool("lookup_weather", "The application's own tool.", {"type": "object"})
    record_model_request("openai.chat", [*offered(ticket), own])
    await call(server)
    attrs = calls(verdicts)[-1]
    assert judged(attrs) == ("converged", "ok", "model_request", "openai.chat/0", True)
    assert (attrs[A.OFFERED_TOOL_COUNT], attrs[A.OFFERED_DISCOVERED_TOOL_COUNT]) == (1, 4)


async def test_only_application_tools_record_nothing(verdicts: Pipeline, server: str) -> None:
    await listed(server)
    record_model_request("openai.chat", [OfferedTool("lookup_weather", "Own.", {})])
    assert not _agents.AGENTS.current(_agents.AGENT.get())
    assert len(_agents.AGENTS) == 0
    await call(server)
    attrs = calls(verdicts)[-1]
    assert A.AGENT_LABEL not in attrs
    assert attrs[A.CATALOG_CLIENT_SOURCE] == "discovery_result"


async def test_exactly_an_earlier_catalog_after_an_added_tool_is_stale(
    verdicts: Pipeline, added: str
) -> None:
    server = added
    before = await listed(server)
    now = await changed(server, "trigger_change")  # only adds added_tool
    assert {t.name for t in now} - {t.name for t in before} == {"added_tool"}
    record_model_request("openai.chat", offered(before))
    await call(server)
    attrs = calls(verdicts)[-1]
    assert judged(attrs)[:3] == (
        "stale",
        "earlier_catalog_offered",
        "model_request",
    )
    assert attrs[A.OFFERED_EARLIER_CATALOG] is True
    record_model_request("openai.chat", offered(now))  # offered the new catalog: not stale
    await call(server)
    assert judged(calls(verdicts)[-1])[:2] == ("converged", "ok")


async def test_a_long_lived_session_is_judged_on_the_servers_latest_discovery(
    verdicts: Pipeline, added: str
) -> None:
    """The agent's own session listed before the change and hears it; another session lists
    again (the application re-listed elsewhere): what the model was offered is judged against
    that latest discovery, not the session's older one (not merely ``signal_after_discovery``)."""
    async with Client(added) as session:
        before = list((await session.list_tools()).tools)
        await session.call_tool("trigger_change", {})
        now = await listed(added)  # another session
        assert len(now) == len(before) + 1
        record_model_request("openai.chat", offered(before))
        await session.call_tool("create_ticket", {"title": "t"})
        assert judged(calls(verdicts)[-1])[:3] == (
            "stale",
            "earlier_catalog_offered",
            "model_request",
        )
        record_model_request("openai.chat", offered(now))
        await session.call_tool("create_ticket", {"title": "t"})
        assert judged(calls(verdicts)[-1])[:2] == ("converged", "ok")


async def test_the_model_request_outranks_a_registered_install(
    verdicts: Pipeline, server: str
) -> None:
    before = await listed(server)
    async with Client(server) as client:
        await client.call_tool("trigger_edit", {})
        now = list((await client.list_tools()).tools)
        record_installed_tools(client, before)  # the hook reports the old definitions
        await client.call_tool("create_ticket", {"title": "t"})
        record_model_request("openai.chat", offered(now))  # the model got the new ones
        await client.call_tool("create_ticket", {"title": "t"})
    hooked, requested = calls(verdicts)
    # A reported install reads as its digest on a call span (``client_source = digest``).
    assert judged(hooked)[:3] == ("stale", "digest_mismatch", "digest")
    assert A.CATALOG_OVERRULED_SOURCE not in hooked
    assert judged(requested) == ("converged", "ok", "model_request", "openai.chat/0", True)
    assert requested[A.CATALOG_OVERRULED_SOURCE] == "registered"


CANARY = "CANARY-7f3a"


async def test_nothing_the_request_offered_is_exported(
    verdicts: Pipeline, server: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG", logger="otel_mcp_health")
    tools = await listed(server)
    planted = [
        OfferedTool(
            t.name,
            f"{t.description} {CANARY}-description",
            {**t.input_schema, "x-note": f"{CANARY}-schema"},
        )
        for t in tools
    ]
    own = OfferedTool(f"{CANARY}-own-tool", f"{CANARY}-own", {"title": f"{CANARY}-own-schema"})
    record_model_request("openai.chat", [*planted, own])
    await call(server)
    assert calls(verdicts)[-1][A.AGENT_LABEL] == "openai.chat/0"
    exported = [json.loads(s.to_json()) for s in verdicts.spans()]
    metrics = verdicts.reader.get_metrics_data()
    text = json.dumps(exported) + (metrics.to_json() if metrics is not None else "")
    assert CANARY not in text
    assert CANARY not in caplog.text


async def test_what_agents_keep_is_bounded_in_count_and_bytes(verdicts: Pipeline) -> None:
    many = [
        types.Tool(name=f"tool_{i}", description=f"{i} " + "d" * 1000, input_schema=_SCHEMA)
        for i in range(3000)
    ]

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=many)

    await listed(Server("many", version="1", on_list_tools=on_list_tools))
    wide = offered(many)

    def request(tools: list[OfferedTool]) -> _agents.Snapshot | None:
        """One model request in a context of its own (a new agent): its snapshot."""
        context = contextvars.Context()
        context.run(record_model_request, "openai.chat", tools)
        return context.get(_agents.AGENT)

    for i in range(2000):  # thousands of small agents: the count bound holds
        request(wide[i : i + 5])
    assert len(_agents.AGENTS) == MAX_AGENTS
    assert {s.label for s in _agents.AGENTS._latest.values()} == {
        f"openai.chat/{slot}" for slot in range(MAX_AGENTS)
    }
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(40):  # large agents: the byte bound holds
            request(wide[i * 10 : i * 10 + 400])
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(_agents.AGENTS) < MAX_AGENTS
    assert _agents.AGENTS.held_bytes <= _agents.MAX_BYTES
    assert held <= 1.25 * _agents.MAX_BYTES, held  # measured: the estimate is close
    assert request(wide) is None  # one request larger than an agent may keep: nothing kept


def test_nothing_is_recorded_while_the_instrumentation_is_off() -> None:
    record_model_request("openai.chat", [OfferedTool("create_ticket", "d", {})])
    assert len(_agents.AGENTS) == 0
    assert not _agents.AGENTS.active


async def test_hostile_definitions_never_raise_and_never_read_green(
    verdicts: Pipeline, server: str
) -> None:
    tools = await listed(server)
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(500):
        deep = {"type": "object", "properties": {"x": deep}}
    hostile = [
        OfferedTool("create_ticket", "d" * 5_000_000, {"type": "object", "x": float("nan")}),
        OfferedTool("create_ticket", None, deep),
        OfferedTool("create_ticket", None, {"properties": {str(i): {} for i in range(50_000)}}),
        OfferedTool("", None, None),
        OfferedTool("fail", 42, ["not", "a", "schema"]),  # type: ignore[arg-type]
    ]
    for tool in hostile:
        record_model_request("openai.chat", [*offered(tools[1:]), tool])
        await call(server)
        attrs = calls(verdicts)[-1]
        assert attrs[A.CATALOG_VERDICT] != "converged" or tool.name == "", tool.name
    assert _agents.AGENTS.held_bytes <= _agents.MAX_BYTES


async def test_a_failing_index_or_comparison_never_reaches_the_application(
    verdicts: Pipeline, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = await listed(server)

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("index failed")

    for hostile in (42, None, [object(), "x"], iter(()), offered(tools)):
        with monkeypatch.context() as patch:
            patch.setattr(_agents.ToolIndex, "map", boom)
            record_model_request("openai.chat", hostile)  # type: ignore[arg-type]
    record_model_request("openai.chat", offered(tools))
    monkeypatch.setattr(_agents, "compare_offered", boom)
    async with Client(server) as client:
        result = await client.call_tool("create_ticket", {"title": "t"})
    assert not result.is_error
    attrs = calls(verdicts)[-1]
    assert A.AGENT_LABEL not in attrs
    assert attrs[A.CALL_CONTRACT] == "ok"  # the call's other evidence stays
