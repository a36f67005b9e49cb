"""In-process servers through the real SDK: ``mcp.Client(server)`` (direct dispatcher, the
``server/discover`` era, no SDK span) and ``mcp.Client(server, mode="legacy")`` (JSON-RPC over
memory streams, the ``initialize`` era, SDK span replaced by ours)."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as types
import pytest
from mcp import Client, ClientSession, MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind, StatusCode
from tests.integration.mcp_health_servers import ALL_TOOLS, PAGE1, PAGE2, build_server
from tests.integration.mcp_health_support import Captured, attribute_types

from otel_mcp_health import attributes as A
from otel_mcp_health import environment_variables as env
from otel_mcp_health.core.digest import digest_tools
from otel_mcp_health.instrumentation import (
    McpHealthInstrumentor,
    _catalog_hooks,
    record_installed_tools,
)

pytestmark = pytest.mark.anyio

MODES = pytest.mark.parametrize(
    ("mode", "era", "version"),
    [("auto", "server/discover", "2026-07-28"), ("legacy", "initialize", "2025-11-25")],
    ids=["direct-discover", "legacy-initialize"],
)


def _wire(tools: list[types.Tool]) -> list[dict[str, Any]]:
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]


async def _discover(client: Client) -> None:
    first = await client.list_tools()
    await client.list_tools(cursor=first.next_cursor)


@MODES
async def test_handshake_span(captured: Captured, mode: str, era: str, version: str) -> None:
    async with Client(build_server(), mode=mode) as client:
        assert client.protocol_version == version
    span = captured.one(era)
    assert span.kind is SpanKind.CLIENT
    attrs = span.attributes or {}
    expected = {
        A.MCP_METHOD_NAME: era,
        A.SESSION_ERA: era,
        A.MCP_PROTOCOL_VERSION: version,
        A.SESSION_CAPABILITY_TOOLS: True,
        A.SERVER_NAME: "health-test-server",
        A.SERVER_VERSION: "1.2.3",
        A.TRANSPORT_OUTCOME: "ok",
        A.TRANSPORT_REQUEST_WRITTEN: True,
    }
    assert {k: attrs[k] for k in expected} == expected
    assert isinstance(attrs[A.SESSION_KEY], str)
    assert len(str(attrs[A.SESSION_KEY])) == 16
    assert attrs[A.SESSION_REQUESTED_VERSION] == (
        "2026-07-28" if era == "server/discover" else "2025-11-25"
    )
    assert isinstance(attrs[A.SESSION_CAPABILITY_TOOLS_LIST_CHANGED], bool)
    if era == "initialize":
        assert attrs[A.SESSION_CAPABILITY_TOOLS_LIST_CHANGED] is True
    # every mode has the request's id, the direct in-process path included (the peer mints it)
    assert isinstance(attrs[A.JSONRPC_REQUEST_ID], str)
    # in-process: semconv has no network.transport value, so none is recorded
    assert A.NETWORK_TRANSPORT not in attrs
    assert span.status.status_code is StatusCode.UNSET
    # exactly one CLIENT span per request: the SDK's own ``MCP send`` span is gone
    assert captured.sdk_client_spans() == []


@MODES
async def test_two_page_catalog(captured: Captured, mode: str, era: str, version: str) -> None:
    async with Client(build_server(), mode=mode) as client:
        await _discover(client)
    first, second = captured.named("tools/list")
    a1, a2 = first.attributes or {}, second.attributes or {}
    assert a1[A.CATALOG_PAGE_INDEX] == 0
    assert a2[A.CATALOG_PAGE_INDEX] == 1
    assert A.CATALOG_PAGE_CURSOR_HASH not in a1
    assert a2[A.CATALOG_PAGE_CURSOR_HASH] == a1[A.CATALOG_PAGE_NEXT_CURSOR_HASH]
    assert A.CATALOG_PAGE_NEXT_CURSOR_HASH not in a2
    assert a1[A.CATALOG_PAGE_TOOL_COUNT] == len(PAGE1)
    assert a2[A.CATALOG_PAGE_TOOL_COUNT] == len(PAGE2)
    assert a1[A.CATALOG_PAGE_DIGEST] == digest_tools(_wire(PAGE1))
    assert a2[A.CATALOG_PAGE_DIGEST] == digest_tools(_wire(PAGE2))
    assert A.CATALOG_DIGEST not in a1
    assert a2[A.CATALOG_DIGEST] == digest_tools(_wire(ALL_TOOLS))
    assert a2[A.CATALOG_TOOL_COUNT] == len(ALL_TOOLS)
    assert a2[A.CATALOG_DIGEST_PROJECTION] == "v1"
    assert a1[A.EVIDENCE_ORIGIN] == a2[A.EVIDENCE_ORIGIN] == A.ORIGIN_APPLICATION
    assert a1[A.SESSION_KEY] == a2[A.SESSION_KEY]
    assert attribute_types(second) | {} == {
        **dict.fromkeys(
            (A.MCP_METHOD_NAME, A.SESSION_KEY, A.MCP_PROTOCOL_VERSION, A.EVIDENCE_ORIGIN), str
        ),
        **dict.fromkeys((A.CATALOG_PAGE_CURSOR_HASH, A.CATALOG_PAGE_DIGEST, A.CATALOG_DIGEST), str),
        A.CATALOG_DIGEST_PROJECTION: str,
        A.CATALOG_PAGE_INDEX: int,
        A.CATALOG_PAGE_TOOL_COUNT: int,
        A.CATALOG_TOOL_COUNT: int,
        A.TRANSPORT_OUTCOME: str,
        A.TRANSPORT_REQUEST_WRITTEN: bool,
        A.JSONRPC_REQUEST_ID: str,
        **dict.fromkeys((A.SERVER_NAME, A.SERVER_TARGET_KEY), str),
    }
    assert second.name == "tools/list"
    assert second.kind is SpanKind.CLIENT


def _one_page_server() -> Server[Any]:
    async def one_page(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=ALL_TOOLS)

    return Server("one-page", version="1.0.0", on_list_tools=one_page)


async def test_each_page_is_digested_once_and_the_catalog_once_per_traversal(
    captured: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page costs one digest of its own tools; the catalog's digest is computed once, on the
    last page, and not at all when the traversal had one page (it is that page's digest)."""
    digested: list[int] = []
    real, real_both = _catalog_hooks.digest_tools, _catalog_hooks.digests

    def counting(tools: list[Any]) -> str:
        digested.append(len(tools))
        return real(tools)

    def counting_both(tools: list[Any]) -> tuple[str, dict[str, str]]:
        digested.append(len(tools))  # the catalog's digest and its per-tool digests, one pass
        return real_both(tools)

    monkeypatch.setattr(_catalog_hooks, "digest_tools", counting)
    monkeypatch.setattr(_catalog_hooks, "digests", counting_both)
    async with Client(build_server(), mode="legacy") as client:
        await _discover(client)
    assert digested == [len(PAGE1), len(PAGE2), len(ALL_TOOLS)]
    digested.clear()
    async with Client(_one_page_server(), mode="legacy") as client:
        await client.list_tools()
    assert digested == [len(ALL_TOOLS)]
    one_page = captured.named("tools/list")[-1].attributes or {}
    assert one_page[A.CATALOG_PAGE_DIGEST] == one_page[A.CATALOG_DIGEST]
    assert one_page[A.CATALOG_DIGEST] == digest_tools(_wire(ALL_TOOLS))
    assert one_page[A.CATALOG_TOOL_COUNT] == len(ALL_TOOLS)


@MODES
async def test_tool_call_outcomes(captured: Captured, mode: str, era: str, version: str) -> None:
    async with Client(build_server(), mode=mode) as client:
        await _discover(client)
        ok = await client.call_tool("create_ticket", {"title": "t", "priority": "p"})
        failed = await client.call_tool("fail", {})
        with pytest.raises(MCPError) as rejected:
            await client.call_tool("bad_args", {"ticket": "x"})
        with pytest.raises(RuntimeError):
            await client.call_tool("typed_bad", {})
        await client.call_tool("typed", {})
        await client.call_tool("lookup", {})
    assert ok.is_error is False
    assert failed.is_error is True
    assert rejected.value.code == -32602

    span = captured.one("tools/call create_ticket")
    attrs = span.attributes or {}
    assert span.kind is SpanKind.CLIENT
    assert attribute_types(span) == {
        A.MCP_METHOD_NAME: str,
        A.SESSION_KEY: str,
        A.MCP_PROTOCOL_VERSION: str,
        A.GEN_AI_TOOL_NAME: str,
        A.GEN_AI_OPERATION_NAME: str,
        A.CALL_IDLE_WINDOW_S: float,
        A.CALL_CONTRACT: str,
        A.TOOL_READ_ONLY: bool,
        A.CALL_IS_ERROR: bool,
        A.TRANSPORT_OUTCOME: str,
        A.TRANSPORT_REQUEST_WRITTEN: bool,
        A.JSONRPC_REQUEST_ID: str,
        **dict.fromkeys((A.SERVER_NAME, A.SERVER_TARGET_KEY), str),
    }
    assert attrs[A.GEN_AI_OPERATION_NAME] == "execute_tool"
    assert attrs[A.CALL_CONTRACT] == A.CONTRACT_OK
    assert attrs[A.TOOL_READ_ONLY] is False
    assert attrs[A.CALL_IS_ERROR] is False
    assert span.status.status_code is StatusCode.UNSET

    fail = captured.one("tools/call fail")
    assert (fail.attributes or {})[A.ERROR_TYPE] == A.ERROR_TYPE_TOOL_ERROR
    assert (fail.attributes or {})[A.CALL_IS_ERROR] is True
    assert fail.status.status_code is StatusCode.ERROR
    assert fail.status.description is None

    bad = captured.one("tools/call bad_args")
    battrs = bad.attributes or {}
    assert battrs[A.ERROR_TYPE] == "-32602"
    assert battrs[A.RPC_RESPONSE_STATUS_CODE] == "-32602"
    assert battrs[A.TRANSPORT_OUTCOME] == "ok"
    assert A.CALL_IS_ERROR not in battrs
    assert bad.status.status_code is StatusCode.ERROR
    assert bad.status.description is None
    assert [(e.name, dict(e.attributes or {})) for e in bad.events] == [
        (A.EXCEPTION_EVENT, {A.EXCEPTION_TYPE: "MCPError"})
    ]

    typed_bad = (captured.one("tools/call typed_bad").attributes) or {}
    assert typed_bad[A.CALL_OUTPUT_SCHEMA_VALID] is False
    assert typed_bad[A.CALL_IS_ERROR] is False
    assert typed_bad[A.ERROR_TYPE] == "RuntimeError"
    assert (captured.one("tools/call typed").attributes or {})[A.CALL_OUTPUT_SCHEMA_VALID] is True
    assert A.CALL_OUTPUT_SCHEMA_VALID not in (span.attributes or {})
    assert (captured.one("tools/call lookup").attributes or {})[A.TOOL_READ_ONLY] is True
    assert A.TOOL_READ_ONLY not in (fail.attributes or {})  # no annotation: unknown, not False
    assert captured.sdk_client_spans() == []


@MODES
async def test_contract_check(captured: Captured, mode: str, era: str, version: str) -> None:
    async with Client(build_server(), mode=mode) as client:
        await client.call_tool("lookup", {})  # before any discovery: nothing to check against
        await _discover(client)
        await client.call_tool("create_ticket", {"title": "secret title"})
        with pytest.raises(MCPError):
            await client.call_tool("no_such_tool", {"a": 1})
    before, *_ = captured.named("tools/call lookup")
    assert A.CALL_CONTRACT not in (before.attributes or {})
    missing = captured.one("tools/call create_ticket").attributes or {}
    assert missing[A.CALL_CONTRACT] == A.CONTRACT_MISSING_REQUIRED_ARGUMENT
    assert missing[A.CALL_MISSING_ARGUMENTS] == ("priority",)
    unknown = captured.one("tools/call no_such_tool").attributes or {}
    assert unknown[A.CALL_CONTRACT] == A.CONTRACT_UNKNOWN_TOOL


async def test_internal_list_is_marked(captured: Captured) -> None:
    async with Client(build_server(), mode="legacy") as client:
        await client.call_tool("create_ticket", {"title": "t", "priority": "p"})
    internal = captured.one("tools/list")
    assert (internal.attributes or {})[A.EVIDENCE_ORIGIN] == A.ORIGIN_INTERNAL
    assert A.CATALOG_DIGEST not in (internal.attributes or {})
    call = captured.one("tools/call create_ticket")
    # the SDK's output-schema refresh runs inside call_tool, while the call span is still open;
    # it is a sibling request, not a child of the call (one CLIENT span per request)
    assert (call.start_time or 0) < (internal.start_time or 0)
    assert (internal.end_time or 0) <= (call.end_time or 0)


@MODES
async def test_progress_events(captured: Captured, mode: str, era: str, version: str) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with Client(build_server(), mode=mode) as client:
        await client.call_tool("progress", {}, progress_callback=on_progress)
        with anyio.fail_after(5):
            while len(seen) < 3:
                await anyio.lowlevel.checkpoint()
    span = captured.one("tools/call progress")
    events = [e for e in span.events if e.name == A.PROGRESS_EVENT]
    assert seen == [1.0, 2.0, 3.0]
    assert [dict(e.attributes or {}) for e in events] == [
        {A.PROGRESS_VALUE: float(v), A.PROGRESS_TOTAL: 3.0, A.PROGRESS_TOKEN_MATCH: True}
        for v in (1, 2, 3)
    ]
    assert all((span.start_time or 0) <= e.timestamp <= (span.end_time or 0) for e in events)


@MODES
async def test_timeout(captured: Captured, mode: str, era: str, version: str) -> None:
    async with Client(build_server(), mode=mode) as client:
        with pytest.raises(MCPError) as timed_out:
            await client.call_tool("slow", {"seconds": 5}, read_timeout_seconds=0.05)
    assert timed_out.value.code == -32001
    attrs = captured.one("tools/call slow").attributes or {}
    assert attrs[A.CALL_TIMED_OUT] is True
    assert attrs[A.ERROR_TYPE] == A.ERROR_TYPE_TIMEOUT
    assert attrs[A.CALL_DEADLINE_S] == 0.05
    assert attrs[A.TRANSPORT_REQUEST_WRITTEN] is True
    assert A.RPC_RESPONSE_STATUS_CODE not in attrs  # -32001 is the SDK's, never on the wire


@MODES
async def test_method_not_found(captured: Captured, mode: str, era: str, version: str) -> None:
    async with Client(build_server(), mode=mode) as client:
        with pytest.raises(MCPError) as missing:
            await client.session.list_prompts()
    assert missing.value.code == -32601
    span = captured.one("prompts/list")
    assert (span.attributes or {})[A.RPC_RESPONSE_STATUS_CODE] == "-32601"
    assert (span.attributes or {})[A.ERROR_TYPE] == "-32601"


async def test_list_changed_notification(captured: Captured) -> None:
    received: list[object] = []

    async def handler(message: object) -> None:
        received.append(message)

    async with Client(build_server(), mode="legacy", message_handler=handler) as client:
        await client.call_tool("trigger_change", {})
        with anyio.fail_after(5):
            while not any(isinstance(m, types.ToolListChangedNotification) for m in received):
                await anyio.lowlevel.checkpoint()
    span = captured.one(A.NOTIFICATION_SPAN_METHOD)
    call = captured.one("tools/call trigger_change")
    assert span.kind is SpanKind.SERVER
    attrs = span.attributes or {}
    assert attrs[A.MCP_METHOD_NAME] == A.NOTIFICATION_SPAN_METHOD
    assert attrs[A.SESSION_KEY] == (call.attributes or {})[A.SESSION_KEY]
    assert attrs[A.SERVER_NAME] == "health-test-server"
    assert attrs[A.MCP_PROTOCOL_VERSION] == "2025-11-25"


async def test_parenting_and_propagation(captured: Captured) -> None:
    """Our span is the one the SDK injects into ``params._meta``: the server span is its child."""
    async with Client(build_server(), mode="legacy") as client:
        await client.call_tool("lookup", {})
    ours = captured.one("tools/call lookup")
    server_spans = [
        s
        for s in captured.sdk_exporter.get_finished_spans()
        if s.kind is SpanKind.SERVER and s.name == "tools/call lookup"
    ]
    assert len(server_spans) == 1
    assert server_spans[0].parent is not None
    assert server_spans[0].parent.span_id == ours.context.span_id


async def test_record_installed_tools(captured: Captured) -> None:
    async with Client(build_server()) as client:
        record_installed_tools(client, PAGE1)
        record_installed_tools(client.session, _wire(ALL_TOOLS))
        record_installed_tools(object(), PAGE1)  # unknown session: ignored, never raises
        record_installed_tools(client, [{"name": "x", "inputSchema": {"n": float("nan")}}])
        handshake = captured.one("server/discover").attributes or {}
        key = handshake[A.SESSION_KEY]
    first, second, broken = captured.named(A.INSTALL_SPAN_NAME)
    assert first.kind is SpanKind.INTERNAL
    assert dict(first.attributes or {}) == {
        A.SESSION_KEY: key,
        # the install names its server as the handshake did (in-process: the server object's
        # keyed token, docs/model.md#scope)
        A.SERVER_TARGET_KEY: handshake[A.SERVER_TARGET_KEY],
        A.SERVER_NAME: handshake[A.SERVER_NAME],
        A.SERVER_VERSION: handshake[A.SERVER_VERSION],
        A.CATALOG_CLIENT_DIGEST: digest_tools(_wire(PAGE1)),
        A.CATALOG_CLIENT_SOURCE: "registered",
        A.CATALOG_CLIENT_TOOL_COUNT: len(PAGE1),
        A.CATALOG_DIGEST_PROJECTION: "v1",
    }
    assert (second.attributes or {})[A.CATALOG_CLIENT_DIGEST] == digest_tools(_wire(ALL_TOOLS))
    assert (broken.attributes or {})[A.CATALOG_DIGEST_ERROR] == "digest_unrepresentable"
    assert A.CATALOG_CLIENT_DIGEST not in (broken.attributes or {})


async def test_metrics(captured: Captured) -> None:
    async with Client(build_server(), mode="legacy") as client:
        await client.call_tool("fail", {})
    operations = captured.metric_points(A.METRIC_MCP_CLIENT_OPERATION_DURATION)
    by_method = {p["attributes"][A.MCP_METHOD_NAME]: p for p in operations}
    call = by_method["tools/call"]
    assert call["attributes"] == {
        A.MCP_METHOD_NAME: "tools/call",
        A.MCP_PROTOCOL_VERSION: "2025-11-25",
        A.ERROR_TYPE: "tool_error",
        A.GEN_AI_TOOL_NAME: "fail",
        A.GEN_AI_OPERATION_NAME: "execute_tool",
        A.SERVER_NAME: "health-test-server",
    }
    assert list(call["explicit_bounds"]) == [float(b) for b in A.DURATION_BUCKETS]
    sessions = captured.metric_points(A.METRIC_MCP_CLIENT_SESSION_DURATION)
    assert len(sessions) == 1
    assert sessions[0]["count"] == 1
    assert sessions[0]["attributes"] == {
        A.MCP_PROTOCOL_VERSION: "2025-11-25",
        A.SERVER_NAME: "health-test-server",
    }


async def test_plain_client_session_over_streams(captured: Captured) -> None:
    """A raw ``ClientSession`` (no ``mcp.Client``) over memory streams, ``initialize`` era."""
    from mcp.shared.memory import create_client_server_memory_streams

    server = build_server()
    async with (
        create_client_server_memory_streams() as (client_streams, server_streams),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(
            lambda: server.run(
                server_streams[0], server_streams[1], server.create_initialization_options()
            )
        )
        async with ClientSession(client_streams[0], client_streams[1]) as session:
            await session.initialize()
            await session.call_tool("fail", {})
        tg.cancel_scope.cancel()
    assert [s.name for s in captured.client_spans()] == ["initialize", "tools/call fail"]
    call = captured.one("tools/call fail")
    assert (call.attributes or {})[A.ERROR_TYPE] == "tool_error"
    assert captured.sdk_client_spans() == []


async def test_page_without_first_page_is_a_gap(captured: Captured) -> None:
    async with Client(build_server(), mode="legacy") as client:
        first = await client.list_tools()
        await client.list_tools(cursor=first.next_cursor)
        await client.list_tools(cursor=first.next_cursor)  # the same cursor again: a loop
    pages = captured.named("tools/list")
    assert [(p.attributes or {})[A.CATALOG_PAGE_INDEX] for p in pages] == [0, 1, 1]
    assert A.CATALOG_DIGEST in (pages[1].attributes or {})
    # the repeated page starts from no traversal (the last one completed): it cannot chain
    assert A.CATALOG_DIGEST not in (pages[2].attributes or {})
    assert A.CATALOG_TOOL_COUNT not in (pages[2].attributes or {})


async def test_settings_from_environment(
    captured: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    McpHealthInstrumentor().uninstrument()
    monkeypatch.setenv(env.OTEL_INSTRUMENTATION_MCP_HEALTH_IDLE_WINDOW_S, "12.5")
    monkeypatch.setenv(env.OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_DIGEST, "false")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(captured.exporter))
    McpHealthInstrumentor().instrument(tracer_provider=provider)
    async with Client(build_server(), mode="legacy") as client:
        await _discover(client)
        await client.call_tool("lookup", {})
    last = captured.named("tools/list")[-1].attributes or {}
    assert last[A.CATALOG_TOOL_COUNT] == len(ALL_TOOLS)
    assert A.CATALOG_DIGEST not in last
    assert A.CATALOG_PAGE_DIGEST not in last
    assert (captured.one("tools/call lookup").attributes or {})[A.CALL_IDLE_WINDOW_S] == 12.5


async def test_waiting_for_user_during_elicitation(captured: Captured) -> None:
    """Legacy era only: at 2026-07-28 the direct path has no server-to-client back-channel."""
    during: list[object] = []

    async def elicitation(context: Any, params: Any) -> types.ElicitResult:
        call = next(s for s in captured.started if s.name == "tools/call ask")
        during.append((call.attributes or {}).get(A.CALL_WAITING_FOR_USER))
        return types.ElicitResult(action="accept", content={"ok": True})

    async with Client(build_server(), mode="legacy", elicitation_callback=elicitation) as client:
        result = await client.call_tool("ask", {})
    assert result.is_error is False
    assert during == [True]
    assert (captured.one("tools/call ask").attributes or {})[A.CALL_WAITING_FOR_USER] is False


@MODES
async def test_session_end_span(captured: Captured, mode: str, era: str, version: str) -> None:
    async with Client(build_server(), mode=mode) as client:
        await client.call_tool("lookup", {})
    end = captured.one(A.SESSION_END_SPAN_NAME)
    assert end.kind is SpanKind.INTERNAL
    key = (captured.one(era).attributes or {})[A.SESSION_KEY]
    assert dict(end.attributes or {}) == {A.SESSION_KEY: key}
    assert captured.spans()[-1] is end or captured.spans()[-1].name == A.SESSION_END_SPAN_NAME
