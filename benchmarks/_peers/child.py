"""One configuration of the peer benchmark, in its own venv and its own fresh process.

``python child.py '<json>'`` with ``{"kind", "mode", "url", "calls", "warmup", "slices"}``:
``kind`` is ``baseline``, ``ours``, ``ours-instrumentation`` (no span processor), ``traceloop``,
``openlit`` or ``logfire`` (the package it names is installed in this venv, with ``mcp`` 1.x or
2.x); ``mode`` is ``time`` (CPU per call and latency, in-process and over streamable HTTP to
``url``), ``probe`` (what the configuration records: spans per call, attributes per span, span
names, whether the call's arguments or result appear on a span; with an
``InMemorySpanExporter``) or ``calls`` (in-process calls and nothing else, for an instruction
count under callgrind: ``bench_instructions.py``); ``calls`` names the transports to use and how
many calls each makes. It prints one line, ``PEERS-RESULT <json>``;
anything else it or the peer prints is not read. Only this file's standard library, the SDK and
the peer's public set-up are used, so it runs in every venv of ``bench_peers.py``.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ARGUMENT = "otel-peer-probe"  # the call's argument: a probe looks for it on the spans
RESULT = "3 articles found"  # the tool's answer (both servers)
ARGUMENTS = {"query": ARGUMENT, "limit": 3}
PROBE_CALLS = 10
MCP_MAJOR = int(version("mcp").split(".")[0])


class _NoOpExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _empty_pricing() -> str:
    path = Path(tempfile.gettempdir()) / "otel-mcp-health-bench-pricing.json"
    path.write_text("{}", encoding="utf-8")
    return str(path)


def _setup(kind: str, exporter: SpanExporter) -> list[str]:
    """Put ``kind`` in force, exporting every span to ``exporter`` through a
    ``SimpleSpanProcessor``; returns the warnings the set-up raised (a peer that says it does
    nothing says so there)."""
    exporting = SimpleSpanProcessor(exporter)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if kind == "logfire":  # Logfire makes and installs its own TracerProvider
            import logfire

            logfire.configure(
                send_to_logfire=False,
                console=False,
                metrics=False,
                additional_span_processors=[exporting],
            )
            logfire.instrument_mcp()
            return [str(w.message) for w in caught]
        provider = TracerProvider()
        if kind == "ours":
            from otel_mcp_health import McpHealthInstrumentor, McpHealthSpanProcessor

            provider.add_span_processor(McpHealthSpanProcessor(exporting))
            McpHealthInstrumentor().instrument(tracer_provider=provider)
        else:
            provider.add_span_processor(exporting)
        if kind == "ours-instrumentation":  # ours without the span processor
            from otel_mcp_health import McpHealthInstrumentor

            McpHealthInstrumentor().instrument(tracer_provider=provider)
        trace.set_tracer_provider(provider)
        if kind == "traceloop":
            from opentelemetry.instrumentation.mcp import McpInstrumentor

            McpInstrumentor().instrument(tracer_provider=provider)
        elif kind == "openlit":
            import openlit

            pricing = _empty_pricing()
            from openlit._instrumentors import MODULE_NAME_MAP

            # Its MCP instrumentor only (the others would trace httpx under the HTTP client),
            # on the provider set above (openlit reuses an SDK provider it finds), no metrics.
            openlit.init(
                pricing_json=pricing,  # its default fetches a price list from the web
                disabled_instrumentors=[name for name in MODULE_NAME_MAP if name != "mcp"],
                disable_metrics=True,
                disable_events=True,
            )
    return [str(w.message) for w in caught]


def _clients(url: str) -> dict[str, Callable[[], AbstractAsyncContextManager[Any]]]:
    """An open, initialized client session per transport, on either SDK line (looked up after
    the set-up, so a peer's wrappers of these functions are the ones called)."""
    if MCP_MAJOR >= 2:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from mcp import Client

        from _server import build_server

        return {
            "in-process": lambda: Client(build_server(), mode="legacy"),
            "http": lambda: Client(url, mode="legacy"),
        }
    import anyio
    import mcp.client.session
    import mcp.client.streamable_http
    import mcp.shared.memory
    from server_v1 import build_server

    @asynccontextmanager
    async def in_process() -> AsyncIterator[Any]:
        # What create_connected_server_and_client_session does: OpenLIT 1.45 wraps that
        # function into a coroutine, which breaks its `async with` (TypeError).
        server = build_server()
        options = server.create_initialization_options()
        async with (
            mcp.shared.memory.create_client_server_memory_streams() as (client_ends, server_ends),
            anyio.create_task_group() as group,
        ):
            group.start_soon(server.run, *server_ends, options)
            async with mcp.client.session.ClientSession(*client_ends) as session:
                await session.initialize()
                yield session
            group.cancel_scope.cancel()

    @asynccontextmanager
    async def http() -> AsyncIterator[Any]:
        # The name the peers wrap (1.30 deprecates it for streamable_http_client).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            transport = mcp.client.streamable_http.streamablehttp_client(url)
        async with (
            transport as (read, write, _),
            mcp.client.session.ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session

    return {
        "in-process": in_process,
        "http": http,
    }


async def _time(client: Any, calls: int, warmup: int, slices: int) -> dict[str, float]:
    """CPU µs per call (the least disturbed of ``slices`` slices) and the median latency µs."""
    await client.list_tools()
    for _ in range(warmup):
        await client.call_tool("lookup", ARGUMENTS)
    latencies = []
    per_slice = []
    count = calls // slices
    gc.collect()
    for _ in range(slices):
        cpu = time.process_time_ns()
        for _ in range(count):
            start = time.perf_counter_ns()
            await client.call_tool("lookup", ARGUMENTS)
            latencies.append((time.perf_counter_ns() - start) / 1000)
        per_slice.append((time.process_time_ns() - cpu) / count / 1000)
    return {"cpu_us": min(per_slice), "latency_us": statistics.median(latencies)}


def _mentions(span: ReadableSpan, needle: str) -> bool:
    values = [*span.attributes.values()]
    for event in span.events:
        values += [*event.attributes.values()] if event.attributes else []
    return any(needle in str(value) for value in values)


async def _probe(client: Any, exporter: InMemorySpanExporter) -> dict[str, Any]:
    await client.list_tools()
    for _ in range(3):
        await client.call_tool("lookup", ARGUMENTS)
    import anyio

    await anyio.sleep(0.05)  # spans that end just after the answer (a server's) end first
    exporter.clear()
    for _ in range(PROBE_CALLS):
        await client.call_tool("lookup", ARGUMENTS)
    await anyio.sleep(0.05)
    spans = exporter.get_finished_spans()
    names = Counter(span.name for span in spans)
    return {
        "spans_per_call": len(spans) / PROBE_CALLS,
        "attributes_per_span": statistics.mean(len(s.attributes) for s in spans) if spans else 0,
        "names": {name: count / PROBE_CALLS for name, count in sorted(names.items())},
        "records_arguments": any(_mentions(span, ARGUMENT) for span in spans),
        "records_results": any(_mentions(span, RESULT) for span in spans),
    }


async def _run(job: dict[str, Any]) -> dict[str, Any]:
    exporter = InMemorySpanExporter() if job["mode"] == "probe" else _NoOpExporter()
    out: dict[str, Any] = {"mcp": version("mcp")}
    try:
        out["warnings"] = _setup(job["kind"], exporter)
    except Exception as exc:  # noqa: BLE001 - a configuration that fails is reported, not fatal; a peer that cannot instrument this SDK is a result
        out["setup_error"] = f"{type(exc).__name__}: {exc}"
        return out
    if job["mode"] == "calls":  # in-process calls only, nothing measured (callgrind counts)
        async with _clients(job["url"])["in-process"]() as client:
            await client.list_tools()
            for _ in range(job["warmup"] + job["calls"]["in-process"]):
                await client.call_tool("lookup", ARGUMENTS)
        return out
    for transport, make in _clients(job["url"]).items():
        if transport not in job["calls"]:  # a job may time or probe one transport only
            continue
        async with make() as client:
            if job["mode"] == "probe":
                out[transport] = await _probe(client, exporter)  # type: ignore[arg-type]
            else:
                out[transport] = await _time(
                    client, job["calls"][transport], job["warmup"], job["slices"]
                )
    return out


def main() -> int:
    import anyio

    job = json.loads(sys.argv[1])
    try:
        out = anyio.run(_run, job)
    except Exception:  # noqa: BLE001 - a configuration that fails is reported, not fatal
        out = {"error": traceback.format_exc(limit=4)}
    sys.stdout.write("PEERS-RESULT " + json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
