"""The host comes first (issue 3 item 7).

* The seam is read from the wrappers' own code: every call of our logic a wrapper makes goes
  through a hook module's attribute, inside a fence (``with fence(...)`` or ``try/except``); a
  wrapper that shares its module with hooks (a transport's home, which names its wrapper code in
  ``WRAPPERS``) calls the hooks beside it by name, inside a fence all the same; a factory-built
  wrapper (a row of the patch table) calls the hook it was built for, looked up with ``getattr``
  inside its fence.
* With every function of our extraction seam (the hook modules) forced to raise, the application
  sees the same outcomes as without instrumentation, receives the very objects the SDK produced
  (``is``), and gets no new exception.
* Suppressed instrumentation and non-recording spans do no extraction work.
* instrument -> uninstrument -> instrument works, and uninstrument restores the SDK exactly.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import logging
import sys
from collections.abc import Iterator
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

import pytest
import wrapt
from mcp import Client
from opentelemetry.instrumentation.utils import suppress_instrumentation, unwrap
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import SpanKind
from tests.integration import scenarios
from tests.integration.mcp_health_servers import build_server
from tests.integration.mcp_health_support import STDIO_SERVER, Captured

from otel_mcp_health.instrumentation import (
    McpHealthInstrumentor,
    _catalog_hooks,
    _compat,
    _dispatch_wrappers,
    _session_wrappers,
    _shell,
    _state,
    _v1_wrappers,
)
from otel_mcp_health.instrumentation._compat import HOOK_MODULES
from otel_mcp_health.instrumentation._shell import FACTORY_HOOKS
from otel_mcp_health.package import _instruments

pytestmark = pytest.mark.anyio

#: The modules that hold wrapper code only (the shell: the wrapper factories too, and the
#: wrappers of sessions, dispatchers and the 1.x client), and the one that holds their data.
WRAPPER_MODULES = (_shell, _session_wrappers, _dispatch_wrappers, _v1_wrappers)
_SHELL = {module.__name__ for module in WRAPPER_MODULES} | {_state.__name__}
_PACKAGE = "otel_mcp_health"
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _wrapper_code(module: ModuleType, tree: ast.Module) -> set[str]:
    """The functions of a hook module that run as wrapper code: those its ``WRAPPERS`` names (a
    partial's function and the functions it is given), and every private function of the module
    they reach by name (a helper that runs inside a wrapper is wrapper code too)."""
    roots: list[Any] = []
    for wrapper in getattr(module, "WRAPPERS", ()):
        roots.append(getattr(wrapper, "func", wrapper))
        roots.extend(v for v in getattr(wrapper, "keywords", {}).values() if inspect.isfunction(v))
    names = {f.__name__ for f in roots if f.__module__ == module.__name__}
    defs = {node.name: node for node in tree.body if isinstance(node, _FUNCTIONS)}
    assert names <= set(defs), f"{module.__name__}.WRAPPERS names a function it does not define"
    todo = list(names)
    while todo:
        for node in ast.walk(defs[todo.pop()]):
            if not isinstance(node, ast.Name) or node.id in names:
                continue
            if node.id.startswith("_") and node.id in defs:
                names.add(node.id)
                todo.append(node.id)
    return names


#: Per hook module that also holds wrappers (a transport's home): the names of its wrapper code.
WRAPPER_CODE = {
    module: _wrapper_code(module, ast.parse(inspect.getsource(module)))
    for module in HOOK_MODULES
    if hasattr(module, "WRAPPERS")
}


def _ours(value: object) -> bool:
    return getattr(value, "__module__", "").startswith(_PACKAGE) or (
        isinstance(value, ModuleType) and value.__name__.startswith(_PACKAGE)
    )


def _fenced_lines(tree: ast.AST) -> set[int]:
    """Lines inside a ``with fence(...)`` block or the ``try`` body of an ``except Exception``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        body: list[ast.stmt] = []
        if (
            isinstance(node, ast.With)
            and any(
                isinstance(item.context_expr, ast.Call)
                and getattr(item.context_expr.func, "id", None) == "fence"
                for item in node.items
            )
        ) or (
            isinstance(node, ast.Try)
            and any(getattr(handler.type, "id", None) == "Exception" for handler in node.handlers)
        ):
            body = node.body
        for stmt in body:
            lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def _read_wrappers() -> Iterator[tuple[ModuleType, set[int], ast.Call]]:
    """Every call in wrapper code, with its module and the module's fenced lines: the whole of a
    wrapper module, and the wrapper code of a hook module (:data:`WRAPPER_CODE`)."""
    for module in (*WRAPPER_MODULES, *WRAPPER_CODE):
        tree = ast.parse(inspect.getsource(module))
        fenced = _fenced_lines(tree)
        code: list[ast.AST] = [tree]
        if module in WRAPPER_CODE:
            code = [
                n for n in tree.body if isinstance(n, _FUNCTIONS) and n.name in WRAPPER_CODE[module]
            ]
        for node in (call for part in code for call in ast.walk(part)):
            if isinstance(node, ast.Call):
                yield module, fenced, node


def _wrapper_calls() -> tuple[set[tuple[ModuleType, str]], list[str]]:
    """Every ``<module>.<function>`` of ours the wrappers call, and every call that bypasses
    the seam (our logic called by name, from a non-hook module, or outside a fence)."""
    seam: set[tuple[ModuleType, str]] = set()
    bypasses: list[str] = []
    for wrapper, fenced, node in _read_wrappers():
        func, where = node.func, f"{wrapper.__name__}:{node.lineno}"
        if _is_getattr(func):  # a factory's hook, looked up by name at call time
            if node.lineno not in fenced:
                bypasses.append(f"{where} calls a hook found by getattr unfenced")
        elif isinstance(func, ast.Name):
            target = getattr(wrapper, func.id, None)
            if wrapper in WRAPPER_CODE and getattr(target, "__module__", None) == wrapper.__name__:
                if func.id in WRAPPER_CODE[wrapper]:
                    continue  # wrapper code of the same module
                seam.add((wrapper, func.id))  # a hook beside the wrapper, called by its name
                if node.lineno not in fenced:
                    bypasses.append(f"{where} calls {func.id} unfenced")
            elif _ours(target) and target.__module__ not in _SHELL:  # type: ignore[union-attr]
                bypasses.append(f"{where} calls {func.id} by name")
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            module = getattr(wrapper, func.value.id, None)
            if not isinstance(module, ModuleType) or not _ours(module):
                continue
            if module.__name__ in _SHELL:
                if module is _state and inspect.isfunction(getattr(module, func.attr, None)):
                    bypasses.append(f"{where} calls _state.{func.attr}")
                continue
            if func.attr in WRAPPER_CODE.get(module, ()):
                continue  # another module's wrapper code (read there)
            seam.add((module, func.attr))
            if func.attr.startswith("_"):
                bypasses.append(f"{where} calls {func.value.id}.{func.attr}, not a hook")
            if node.lineno not in fenced:
                bypasses.append(f"{where} calls {func.value.id}.{func.attr} unfenced")
    seam.update(FACTORY_HOOKS)  # what the patch table's factory-built rows call
    return seam, bypasses


def _is_getattr(func: ast.expr) -> bool:
    """``getattr(...)(...)``: a call of whatever ``getattr`` found."""
    return (
        isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr"
    )


WRAPPER_CALLS, BYPASSES = _wrapper_calls()
#: Every function of the extraction seam, the only place our own logic runs: what the wrappers
#: call, and every public function of the hook modules (the hooks call some of them in turn),
#: but the wrapper code beside them and the instrumentor's own life cycle (``uninstrument``
#: resets the unreconciled calls).
SEAM_FUNCTIONS = WRAPPER_CALLS | {
    (module, name)
    for module in HOOK_MODULES
    for name, fn in vars(module).items()
    if inspect.isfunction(fn)
    and fn.__module__ == module.__name__
    and not name.startswith("_")
    and name != "reset"
    and name not in WRAPPER_CODE.get(module, ())
}
SEAM = sorted({name for _, name in SEAM_FUNCTIONS})

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

    for module, name in SEAM_FUNCTIONS:
        monkeypatch.setattr(module, name, breaker(name))
    return calls


async def test_seam_is_complete() -> None:
    # read from the wrappers' code: a wrapper that calls our logic bypassing the seam fails here
    assert not BYPASSES, "\n".join(BYPASSES)
    called = {name for _, name in WRAPPER_CALLS}
    assert {
        "begin_request",
        "finish",
        "on_result",
        "on_error",
        "on_http_response",
        "register_session",
        "after_success",
    } <= called
    assert {module for module, _ in WRAPPER_CALLS} <= {*HOOK_MODULES}, "a hook module is missing"
    # every factory-built row calls an existing hook of a hook module
    assert FACTORY_HOOKS, "the patch table has no factory-built rows"
    for module, name in FACTORY_HOOKS:
        assert inspect.isfunction(getattr(module, name)), f"{module.__name__}.{name}"
    assert {"register_session", "stream_ended", "listen_settled"} <= called
    # the patch table's wrappers are wrapper code: of a wrapper module, or named by the WRAPPERS
    # of a transport's home (never a hook)
    assert WRAPPER_CODE, "no hook module names its wrapper code"
    for hook in (*_compat.HOOKS_1X, *_compat.HOOKS_2X):
        if hook.wrapper is not None:
            found = getattr(hook.wrapper, "func", hook.wrapper)  # a functools.partial's function
            home = sys.modules[found.__module__]
            assert found.__module__ in _SHELL or found.__name__ in WRAPPER_CODE.get(home, ()), (
                f"{hook.module}.{hook.name}"
            )


#: Run 1 breaks everything (no session is ever registered). Run 2 lets sessions and requests
#: start so every per-request hook is reached, and breaks all the rest.
_KEEP = {
    "register_session",
    "learn_pipe",  # the transport each registration learns (register_session's own parts)
    "learn_sse",
    "learn_in_process",
    "begin_request",
    "stdio_spawned",
    "post_matches",
}


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

    for module, name in SEAM_FUNCTIONS:
        if name not in keep:
            monkeypatch.setattr(module, name, breaker(name))
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
            "response_fact",  # called from inside on_http_response and the SSE hooks
            "failure_facts",  # called from inside on_http_error and the SSE hooks
            "session_started",
            "on_sdk_span_exit",
            "taken_by_session",  # mcp 1.x only (run by the version matrix)
            "wire_request_of",  # mcp 1.x only
            "flush",  # public API only (flush_receipts)
            "reconcile",  # public API only (report_reconciliation)
            "argument_digest",  # called from inside the retry check
            "receipt_attributes",  # called when a receipt arrives (no verifier runs here)
            "channel_of",  # called from inside on_result
            "get_attempt",  # on a GET stream that get_stream found
            "get_answered",  # on a GET stream that get_stream found
            "channel_closed",  # on a GET stream that get_stream found
            "listen_route",  # no scenario opens a subscriptions/listen stream
            "listen_acknowledged",  # idem
            "listen_settled",  # idem
            "sse_answered",  # no scenario here talks SSE (tests/matrix/test_sse.py breaks them)
            "sse_failed",  # idem
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
