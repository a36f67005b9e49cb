"""Reliability of the shell (issue 10): real MCP servers, the real instrumentation and processor.

* Misused ``record_installed_tools`` and installed sets without a digest are ``unverifiable``
  with the digest's reason, never a dropped report, an exception or a digest comparison.
* A host-side cancellation after a possible write is silence; before the write it is no call.
* Per-session state is bounded independently of the number of pages.
* Server-chosen names are length-capped on spans and metric labels have bounded value sets.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.integration.mcp_health_servers import build_server, serve_http
from tests.integration.scenarios import list_all
from tests.support.processor_helpers import Pipeline, SessionSpans, attrs

from otel_mcp_health import attributes as A
from otel_mcp_health import environment_variables as env
from otel_mcp_health.core.bounds import MAX_LABEL_VALUES, MAX_NAME_LENGTH, OVERFLOW
from otel_mcp_health.instrumentation import record_installed_tools
from otel_mcp_health.processor import McpHealthSpanProcessor
from otel_mcp_health.processor._spans import INSTRUMENTATION_SCOPE

pytestmark = pytest.mark.anyio


def catalog(span: ReadableSpan) -> tuple[Any, Any]:
    a = attrs(span)
    return a.get(A.CATALOG_VERDICT), a.get(A.CATALOG_REASON)


def _deep(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels):
        node["a"] = {}
        node = node["a"]
    return root


# ----------------------------------------------------------------------------------------------
# record_installed_tools: misuse and undigestable sets
# ----------------------------------------------------------------------------------------------
MISUSES: list[tuple[str, Any, str]] = [
    ("names", ["create_ticket", "fail"], "tool_not_an_object"),
    ("not-iterable", 42, "tool_not_an_object"),
    ("numbers", [1, 2], "tool_not_an_object"),
    ("nan", [{"name": "x", "inputSchema": {"n": float("nan")}}], "digest_unrepresentable"),
    ("deep", [{"name": "x", "inputSchema": _deep(2000)}], "digest_unrepresentable"),
    ("nameless", [{"description": "no name"}], "tool_without_name"),
]


@pytest.mark.parametrize(("tools", "reason"), [m[1:] for m in MISUSES], ids=[m[0] for m in MISUSES])
async def test_an_install_without_a_digest_is_unverifiable(
    instrumented: Pipeline, tools: Any, reason: str
) -> None:
    async with Client(build_server()) as client:
        await list_all(client)
        record_installed_tools(client, tools)  # never raises into the host
        await client.call_tool("lookup", {})
    install = instrumented.last(A.INSTALL_SPAN_NAME)
    assert attrs(install)[A.CATALOG_DIGEST_ERROR] == reason
    assert A.CATALOG_CLIENT_DIGEST not in attrs(install)
    assert catalog(install) == ("unverifiable", reason)
    call = attrs(instrumented.last("tools/call lookup"))
    assert (call[A.VERDICT], call[A.REASON]) == ("stale_catalog", f"catalog_{reason}")
    assert call[A.CATALOG_VERDICT] == "unverifiable"


async def test_a_good_install_after_a_bad_one_converges(instrumented: Pipeline) -> None:
    async with Client(build_server()) as client:
        await list_all(client)
        record_installed_tools(client, ["lookup"])
        first = await client.list_tools()
        second = await client.list_tools(cursor=first.next_cursor)
        record_installed_tools(client, [*first.tools, *second.tools])
    bad, good = instrumented.named(A.INSTALL_SPAN_NAME)
    assert catalog(bad) == ("unverifiable", "tool_not_an_object")
    assert catalog(good) == ("converged", "ok")


# ----------------------------------------------------------------------------------------------
# Host-side cancellation
# ----------------------------------------------------------------------------------------------
_SLOW_TOOLS = [
    types.Tool(name="write_slow", description="Writes, slowly.", input_schema={"type": "object"}),
    types.Tool(
        name="read_slow",
        description="Reads, slowly.",
        input_schema={"type": "object"},
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
]


async def _list_slow(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_SLOW_TOOLS)


async def _call_slow(
    ctx: ServerRequestContext, params: types.CallToolRequestParams
) -> types.CallToolResult:
    await anyio.sleep(5)
    return types.CallToolResult(content=[types.TextContent(type="text", text="late")])


def slow_server() -> Server[Any]:
    """One page, a side-effecting and a read-only tool; every call outlives the host's patience."""
    return Server("slow-server", on_list_tools=_list_slow, on_call_tool=_call_slow)


def _silent_call(a: dict[str, Any]) -> tuple[Any, Any, Any]:
    return a.get(A.VERDICT), a.get(A.NEXT_ACTION), a.get(A.EFFECT_UNKNOWN)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("how", ["move_on_after", "wait_for"])
async def test_host_cancel_after_the_write_is_silence(
    instrumented: Pipeline, mode: str, how: str
) -> None:
    import asyncio

    async with Client(slow_server(), mode=mode) as client:  # type: ignore[arg-type]
        await client.list_tools()
        for tool in ("write_slow", "write_slow", "read_slow"):  # the 2nd call is a retry
            if how == "move_on_after":
                with anyio.move_on_after(0.1):
                    await client.call_tool(tool, {"n": 1})
            else:
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(client.call_tool(tool, {"n": 1}), 0.1)
    first, retry = (attrs(s) for s in instrumented.named("tools/call write_slow"))
    assert _silent_call(first) == ("effect_unknown", "reconcile_before_retry", True)
    assert first[A.REASON] == "timeout"
    assert first[A.CALL_CANCELLED] is True
    assert A.RETRY_UNRECONCILED not in first
    assert retry[A.RETRY_UNRECONCILED] is True
    assert _silent_call(retry)[0] == "effect_unknown"
    # a read-only tool cancelled by the host: the host's deadline passed (docs/model.md)
    lookup = attrs(instrumented.last("tools/call read_slow"))
    assert (lookup[A.VERDICT], lookup[A.NEXT_ACTION], lookup[A.REASON]) == (
        "tool_failed",
        "inspect_tool",
        "timeout",
    )
    assert A.EFFECT_UNKNOWN not in lookup
    calls = instrumented.counts(A.METRIC_CALLS, A.VERDICT)
    assert calls == {"effect_unknown": 2, "tool_failed": 1}


async def test_host_cancel_over_streamable_http_is_silence(instrumented: Pipeline) -> None:
    async with serve_http(slow_server()) as base, Client(base + "/mcp") as client:
        await client.list_tools()
        for _ in range(2):
            with anyio.move_on_after(0.3):
                await client.call_tool("write_slow", {"n": 1})
    first, retry = (attrs(s) for s in instrumented.named("tools/call write_slow"))
    assert _silent_call(first) == ("effect_unknown", "reconcile_before_retry", True)
    assert first[A.CALL_CANCELLED] is True
    assert retry[A.RETRY_UNRECONCILED] is True


async def test_host_cancel_before_the_write_is_no_call(instrumented: Pipeline) -> None:
    async with Client(slow_server(), mode="legacy") as client:  # type: ignore[arg-type]
        await client.list_tools()
        for _ in range(2):
            with anyio.CancelScope() as scope:
                scope.cancel()  # already cancelled: the SDK stops before writing the request
                await client.call_tool("write_slow", {"n": 1})
    first, second = (attrs(s) for s in instrumented.named("tools/call write_slow"))
    for call in (first, second):
        assert call[A.TRANSPORT_REQUEST_WRITTEN] is False
        assert call[A.CALL_CANCELLED] is True
        assert A.VERDICT not in call
        assert A.EFFECT_UNKNOWN not in call
        assert A.CALL_TIMED_OUT not in call
    assert A.RETRY_UNRECONCILED not in second
    assert instrumented.counts(A.METRIC_CALLS, A.VERDICT) == {}


# ----------------------------------------------------------------------------------------------
# Bounded state per session
# ----------------------------------------------------------------------------------------------
def _bytes_per_session(processor: McpHealthSpanProcessor, run: Callable[[str], None]) -> float:
    """Traced bytes the processor keeps per session after ``run`` emitted each session's spans."""
    run("warm-up")  # first-use allocations (caches, metric streams) are not per-session state
    sessions = 4
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for index in range(sessions):
            run(f"session-{index}")
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(processor._sessions) == sessions + 1  # every session is still held
    return (after - before) / sessions


def _chain(prefix: str, pages: int, *, complete: bool) -> list[tuple[str | None, str | None]]:
    links: list[tuple[str | None, str | None]] = [(None, f"{prefix}1")]
    links += [(f"{prefix}{i}", f"{prefix}{i + 1}") for i in range(1, pages)]
    if complete:
        links[-1] = (links[-1][0], None)
    return links


def _processor_only(**options: Any) -> tuple[McpHealthSpanProcessor, TracerProvider]:
    """Processor → a downstream that keeps nothing (the exporter's memory is not ours)."""
    meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
    processor = McpHealthSpanProcessor(SpanProcessor(), meter_provider=meters, **options)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    return processor, provider


@pytest.mark.slow
def test_worst_case_state_per_session_is_bounded() -> None:
    processor, provider = _processor_only()
    tracer = provider.get_tracer(INSTRUMENTATION_SCOPE)

    def worst(key: str) -> None:  # a complete 1,000-page traversal, then 999 pages of another
        spans = SessionSpans(tracer, key=key)
        spans.handshake()
        spans.traversal(_chain("c", 1000, complete=True), start=-900)
        spans.traversal(_chain("d", 999, complete=False), start=-600)

    def typical(key: str) -> None:
        spans = SessionSpans(tracer, key=key)
        spans.handshake()
        spans.traversal(_chain("c", 2, complete=True), start=-10)
        spans.call(start=-1.0, end=0.0)

    worst_bytes = _bytes_per_session(processor, worst)
    typical_bytes = _bytes_per_session(processor, typical)
    print(f"bytes per session: worst case {worst_bytes:.0f}, typical {typical_bytes:.0f}")
    # one 8-byte cursor hash per page of the traversal in progress (up to the 1,000-page cap)
    assert worst_bytes < 16 * 1024
    assert typical_bytes < 4 * 1024


def test_the_page_cap_is_configurable_and_bounds_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env.OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_PAGES, "50")
    processor, provider = _processor_only()
    exporter = InMemorySpanExporter()
    processor.add_downstream(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(INSTRUMENTATION_SCOPE)
    spans = SessionSpans(tracer, key="long")
    spans.handshake()
    spans.traversal(_chain("c", 50, complete=True), start=-100)
    last = exporter.get_finished_spans()[-1].attributes or {}
    assert (last[A.CATALOG_VERDICT], last[A.CATALOG_REASON]) == ("converged", "ok")
    spans.traversal(_chain("d", 51, complete=True), start=-50)
    last = exporter.get_finished_spans()[-1].attributes or {}
    assert (last[A.CATALOG_VERDICT], last[A.CATALOG_REASON]) == ("incomplete", "cursor_remaining")
    with pytest.raises(ValueError, match="max_pages"):
        McpHealthSpanProcessor(SpanProcessor(), max_pages=0)


# ----------------------------------------------------------------------------------------------
# Server-chosen names: capped on spans, bounded as metric labels
# ----------------------------------------------------------------------------------------------
HUGE = "n" * 1_000_000
HUGE_NAMES = (HUGE + "a", HUGE + "b")


async def _list_huge(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[types.Tool(name=name, input_schema={"type": "object"}) for name in HUGE_NAMES]
    )


async def _call_huge(
    ctx: ServerRequestContext, params: types.CallToolRequestParams
) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])


async def test_huge_server_chosen_names_are_capped(instrumented: Pipeline) -> None:
    server = Server(HUGE, version=HUGE, on_list_tools=_list_huge, on_call_tool=_call_huge)
    async with Client(server) as client:
        await client.list_tools()
        for name in HUGE_NAMES:
            await client.call_tool(name, {})
    calls = [s for s in instrumented.spans() if s.name.startswith("tools/call")]
    assert len(calls) == 2
    names = {s.name for s in calls}
    assert len(names) == 2  # distinct names stay distinct
    for span in calls:
        assert len(span.name) <= len("tools/call ") + MAX_NAME_LENGTH
        tool = attrs(span)[A.GEN_AI_TOOL_NAME]
        assert len(tool) <= MAX_NAME_LENGTH
        assert span.name == f"tools/call {tool}"
    every_span = [attrs(s) for s in instrumented.spans()]
    longest = max(len(str(v)) for a in every_span for v in a.values())
    assert longest <= 512
    labels = [p["attributes"] for p in instrumented.metric_points(A.METRIC_CALLS)]
    assert {len(a[A.GEN_AI_TOOL_NAME]) for a in labels} == {MAX_NAME_LENGTH}
    assert all(len(str(v)) <= MAX_NAME_LENGTH for a in labels for v in a.values())


def test_metric_labels_take_a_bounded_number_of_values(pipeline: Pipeline) -> None:
    spans = SessionSpans(pipeline.tracer)
    spans.handshake()
    spans.traversal([(None, None)], start=-10)
    tools = [f"tool-{i}" for i in range(MAX_LABEL_VALUES + 50)]
    for tool in tools:
        spans.call(tool, start=-1.0, end=0.0)
    counts = pipeline.counts(A.METRIC_CALLS, A.GEN_AI_TOOL_NAME)
    assert len(counts) == MAX_LABEL_VALUES + 1
    assert counts[OVERFLOW] == 50
    assert sum(counts.values()) == len(tools)
    outcomes = pipeline.counts(A.METRIC_OUTCOMES, A.GEN_AI_TOOL_NAME)
    assert len(outcomes) == MAX_LABEL_VALUES + 1
