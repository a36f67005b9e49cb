"""The host comes first (issue 3 item 7).

* With every function of our extraction seam (the hook modules) forced to raise, the application
  sees the same outcomes as without instrumentation, receives the very objects the SDK produced
  (``is``), and gets no new exception.
* Suppressed instrumentation and non-recording spans do no extraction work.
* instrument -> uninstrument -> instrument works, and uninstrument restores the SDK exactly.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Any

import pytest
import scenarios
import wrapt
from mcp import Client
from mcp_health_servers import build_server
from mcp_health_support import STDIO_SERVER, Captured
from opentelemetry.instrumentation.utils import suppress_instrumentation, unwrap
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import SpanKind

from otel_mcp_health.instrumentation import McpHealthInstrumentor, _catalog_hooks
from otel_mcp_health.instrumentation._wrappers import HOOK_MODULES
from otel_mcp_health.package import _instruments

pytestmark = pytest.mark.anyio

#: Every function of the extraction seam: the only place our own logic runs (name -> module).
SEAM_MODULES = {
    name: module
    for module in HOOK_MODULES
    for name, fn in vars(module).items()
    if inspect.isfunction(fn) and fn.__module__ == module.__name__ and not name.startswith("_")
}
SEAM = sorted(SEAM_MODULES)

#: Async SDK methods our wrappers sit on; spies go directly around the SDK (inner) and around
#: our wrapper (outer), so each call's pair of observations must be the same object.
SPIED = [
    ("mcp.client.session", "ClientSession", "send_request"),
    ("mcp.client.session", "ClientSession", "call_tool"),
    ("mcp.client.session", "ClientSession", "validate_tool_result"),
    ("mcp.client.session", "ClientSession", "__aexit__"),
    ("mcp.client.client", "Client", "call_tool"),
    ("mcp.shared.jsonrpc_dispatcher", "JSONRPCDispatcher", "send_raw_request"),
    ("mcp.shared.direct_dispatcher", "DirectDispatcher", "send_raw_request"),
]


def _spy(log: list[tuple[str, str, Any]], label: str) -> Any:
    async def spy(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            log.append((label, "raised", exc))
            raise
        log.append((label, "returned", result))
        return result

    return spy


def _wrap_all(log: list[tuple[str, str, Any]]) -> None:
    for module, cls, method in SPIED:
        wrapt.wrap_function_wrapper(module, f"{cls}.{method}", _spy(log, f"{cls}.{method}"))


def _unwrap_all() -> None:
    for module, cls, method in SPIED:
        unwrap(getattr(importlib.import_module(module), cls), method)


async def _run_all(rec: scenarios.Recorder, base_url: str) -> None:
    await scenarios.inprocess(rec)
    await scenarios.http(rec, base_url)
    await scenarios.stdio(rec, str(STDIO_SERVER))


def _comparable(outcomes: list[Any]) -> list[Any]:
    """Drop values that legitimately differ between runs (ephemeral ports, server session ids)."""
    return [o for o in outcomes if not str(o[0]).startswith("http raw initialize")]


@pytest.fixture
def broken_seam(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every extraction function raises; returns the log of attempted calls."""
    calls: list[str] = []

    def breaker(name: str) -> Any:
        def broken(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            raise RuntimeError(f"forced failure in {name}")

        return broken

    for name in SEAM:
        monkeypatch.setattr(SEAM_MODULES[name], name, breaker(name))
    return calls


async def test_seam_is_complete() -> None:
    # the names the wrappers call; a new hook that bypasses the seam fails this test
    assert {
        "begin_request",
        "finish",
        "on_result",
        "on_error",
        "on_http_response",
        "register_session",
    } <= set(SEAM)


#: Run 1 breaks everything (no session is ever registered). Run 2 lets sessions and requests
#: start so every per-request hook is reached, and breaks all the rest.
_KEEP = {"register_session", "begin_request", "stdio_spawned", "post_matches"}


@pytest.mark.parametrize("keep", [set(), _KEEP], ids=["all-broken", "requests-start"])
async def test_forced_failures_change_nothing(
    http_base_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    keep: set[str],
) -> None:
    baseline = scenarios.Recorder()
    await _run_all(baseline, http_base_url)

    calls: list[str] = []

    def breaker(name: str) -> Any:
        def broken(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            raise RuntimeError(f"forced failure in {name}")

        return broken

    for name in set(SEAM) - keep:
        monkeypatch.setattr(SEAM_MODULES[name], name, breaker(name))
    inner: list[tuple[str, str, Any]] = []
    outer: list[tuple[str, str, Any]] = []
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = McpHealthInstrumentor()
    _wrap_all(inner)
    instrumentor.instrument(tracer_provider=provider)
    _wrap_all(outer)
    broken = scenarios.Recorder()
    try:
        with caplog.at_level(logging.DEBUG, logger="otel_mcp_health"):
            await _run_all(broken, http_base_url)
    finally:
        _unwrap_all()  # outer spies
        instrumentor.uninstrument()
        _unwrap_all()  # inner spies

    assert _comparable(broken.outcomes) == _comparable(baseline.outcomes)
    expected = (
        {"register_session", "on_notification", "session_ended"}
        if not keep
        else set(SEAM)
        - keep
        - {
            "installed_tools",  # not called by any hook (public API only)
            "page_result",  # called from inside on_result
            "on_progress",  # called from inside the progress tap
            "session_started",
            "on_sdk_span_exit",
            "taken_by_session",  # mcp 1.x only (run by the version matrix)
            "wire_request_of",  # mcp 1.x only
        }
    )
    assert set(calls) >= expected, expected - set(calls)
    assert any("failed; the application is unaffected" in r.getMessage() for r in caplog.records)
    # the application got exactly the SDK's objects, results and exceptions alike
    assert len(inner) == len(outer) > 100
    for (label_in, kind_in, obj_in), (label_out, kind_out, obj_out) in zip(
        inner, outer, strict=True
    ):
        assert (label_in, kind_in) == (label_out, kind_out)
        assert obj_in is obj_out, label_in


async def test_normal_run_preserves_identity(captured: Captured, http_base_url: str) -> None:
    McpHealthInstrumentor().uninstrument()
    inner: list[tuple[str, str, Any]] = []
    outer: list[tuple[str, str, Any]] = []
    _wrap_all(inner)
    McpHealthInstrumentor().instrument(tracer_provider=TracerProvider())
    _wrap_all(outer)
    rec = scenarios.Recorder()
    try:
        await scenarios.inprocess(rec)
    finally:
        _unwrap_all()
        McpHealthInstrumentor().uninstrument()
        _unwrap_all()
    assert len(inner) == len(outer) > 20
    assert all(a[2] is b[2] for a, b in zip(inner, outer, strict=True))


async def test_suppressed_does_nothing(captured: Captured, broken_seam: list[str]) -> None:
    with suppress_instrumentation():
        async with Client(build_server(), mode="legacy") as client:
            first = await client.list_tools()
            await client.list_tools(cursor=first.next_cursor)
            await client.call_tool("fail", {})
    assert broken_seam == []
    assert captured.spans() == ()


async def test_non_recording_spans_skip_extraction(
    captured: Captured, monkeypatch: pytest.MonkeyPatch, sdk_exporter: InMemorySpanExporter
) -> None:
    McpHealthInstrumentor().uninstrument()
    digests: list[object] = []

    def counting_digest(tools: object) -> str:
        digests.append(tools)
        return "sha256:x"

    monkeypatch.setattr(_catalog_hooks, "digest_tools", counting_digest)
    McpHealthInstrumentor().instrument(tracer_provider=TracerProvider(sampler=ALWAYS_OFF))
    sdk_exporter.clear()
    async with Client(build_server(), mode="legacy") as client:
        first = await client.list_tools()
        await client.list_tools(cursor=first.next_cursor)
        await client.call_tool("fail", {})
    assert digests == []
    # still no SDK span: the (non-recording) span we handed the SDK stands in for it
    assert captured.sdk_client_spans() == []


async def test_instrument_uninstrument_instrument(
    captured: Captured, sdk_exporter: InMemorySpanExporter
) -> None:
    async with Client(build_server(), mode="legacy") as client:
        await client.call_tool("fail", {})
    assert [s.name for s in captured.client_spans()] == ["initialize", "tools/call fail"]

    McpHealthInstrumentor().uninstrument()
    McpHealthInstrumentor().uninstrument()  # idempotent
    captured.exporter.clear()
    sdk_exporter.clear()
    async with Client(build_server(), mode="legacy") as client:
        await client.call_tool("fail", {})
    assert captured.spans() == ()
    # the SDK's own factory is back: its built-in spans reappear unchanged
    assert [s.name for s in captured.sdk_client_spans()] == [
        "MCP send initialize",
        "MCP send tools/call fail",
    ]

    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    McpHealthInstrumentor().instrument(tracer_provider=provider)
    McpHealthInstrumentor().instrument(tracer_provider=provider)  # second call is a no-op
    sdk_exporter.clear()
    async with Client(build_server(), mode="legacy") as client:
        await client.call_tool("fail", {})
    assert [s.name for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT] == [
        "initialize",
        "tools/call fail",
    ]
    assert captured.sdk_client_spans() == []


async def test_entry_point_and_dependencies() -> None:
    found = [
        ep for ep in entry_points(group="opentelemetry_instrumentor") if ep.name == "mcp_health"
    ]
    assert found, "package metadata not installed (run `pip install -e .`)"
    assert found[0].load() is McpHealthInstrumentor
    assert McpHealthInstrumentor().instrumentation_dependencies() == _instruments


def test_no_state_in_init() -> None:
    first = McpHealthInstrumentor()
    assert McpHealthInstrumentor() is first  # BaseInstrumentor is a singleton
    assert set(vars(first)) <= {"_is_instrumented_by_opentelemetry"}


@pytest.fixture(autouse=True)
def _no_leftover_wrappers() -> Iterator[None]:
    yield
    from mcp.client.session import ClientSession

    assert not isinstance(ClientSession.call_tool, wrapt.ObjectProxy)
