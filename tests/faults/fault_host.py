"""The host program of the fault matrix: runs faults, prints what the host saw as one JSON line.

``python fault_host.py MODE PIPELINE FAULT [FAULT ...]``. MODE is ``plain`` (no instrumentation)
or ``instrumented`` (public API only: ``McpHealthInstrumentor``, ``McpHealthSpanProcessor``,
``register_verifier``, ``flush_receipts``). PIPELINE chooses where the instrumented host's
telemetry goes: ``memory`` (in-memory exporters), ``collector_down`` / ``collector_blackhole``
(OTLP to a closed port / to a listener that never answers, plus in memory) or
``downstream_raises`` (a span processor that raises, before the in-memory one).

For every fault the output has each step's value (type and digest of its JSON form) or exception
(type and normalized message), its duration, and (instrumented) the exported spans' names and
verdicts, the exported and logged bytes, and which canaries they contain. All loggers are
captured at DEBUG.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import hostile
import httpx2
from hostile import CANARIES, CANARY_ARG, CANARY_TOKEN, HUGE_NAME
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel

import otel_mcp_health as omh

HOSTILE = str(Path(__file__).with_name("hostile.py"))
FAULT_BOUND_S = 20.0
ARGS = {"secret": CANARY_ARG}


# ---- what the host sees -----------------------------------------------------------------------
def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def normalize(text: str) -> str:
    """Drop what differs between two runs of the same program: ports, addresses, pids."""
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
    text = re.sub(r"0x[0-9a-fA-F]+", "0xADDR", text)
    return re.sub(r"pid \d+", "pid N", text)


def describe(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    text = (
        json.dumps(value.model_dump(mode="json", by_alias=True), sort_keys=True)
        if isinstance(value, BaseModel)
        else repr(value)
    )
    text = normalize(text)
    return {"type": type(value).__qualname__, "digest": _digest(text), "summary": text[:100]}


def describe_exc(exc: BaseException) -> dict[str, Any]:
    message = normalize(str(exc))
    out: dict[str, Any] = {
        "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "digest": _digest(message),
        "message": message[:160],
    }
    if isinstance(exc, BaseExceptionGroup):
        out["children"] = [describe_exc(e) for e in exc.exceptions]
    code = getattr(getattr(exc, "error", None), "code", None)
    if code is not None:
        out["code"] = code
    return out


class Host:
    """What the host application sees: each step's value (or the exception it raised) and how long
    it took; ``session`` runs a body inside one ``mcp.Client`` session as one step."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []

    async def step(self, label: str, fn: Callable[[], Awaitable[Any]]) -> Any:
        started = time.monotonic()
        value = None
        try:
            value = await fn()
            out: dict[str, Any] = {"value": describe(value)}
        except Exception as exc:  # what the application would see
            out = {"raised": describe_exc(exc)}
        out["label"] = label
        out["elapsed_s"] = round(time.monotonic() - started, 3)
        self.steps.append(out)
        return value

    async def session(self, server: Any, body: Callable[[Any], Awaitable[None]], **kw: Any) -> None:
        async def run() -> None:
            async with Client(server, **kw) as client:
                await body(client)

        await self.step("session", run)


# ---- telemetry (instrumented mode) ------------------------------------------------------------
class Records(logging.Handler):
    """Every log record of every logger (DEBUG and up) as (logger name, formatted text), so the
    report can say which canaries reached our logs and which reached other libraries'."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, str]] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.records.append((record.name, self.format(record)))
        except Exception:  # a record that cannot be formatted is still a record
            self.records.append((record.name, repr(record.__dict__)))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _blackhole() -> int:
    """A listener that never accepts: connections complete in the backlog, nothing answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    _BLACKHOLES.append(sock)
    port: int = sock.getsockname()[1]
    return port


_BLACKHOLES: list[socket.socket] = []


class Telemetry:
    """The instrumented host's OpenTelemetry set-up for PIPELINE: the processor in front of
    in-memory exporters, plus OTLP exporters to a dead collector or a raising span processor
    where PIPELINE says so; :meth:`take` drains what was exported and logged into a fault's
    ``telemetry`` entry."""

    def __init__(self, pipeline: str) -> None:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricReader
        from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        class Raising(SpanProcessor):
            """A downstream span processor whose ``on_start`` and ``on_end`` raise
            (``downstream_raises``)."""

            def on_start(self, span: Any, parent_context: Any = None) -> None:
                raise RuntimeError("downstream on_start bug")

            def on_end(self, span: Any) -> None:
                raise RuntimeError("downstream on_end bug")

        self.exporter = InMemorySpanExporter()
        self.reader = InMemoryMetricReader()
        readers: list[MetricReader] = [self.reader]
        downstream: list[SpanProcessor] = []
        if pipeline in ("collector_down", "collector_blackhole"):
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            port = _closed_port() if pipeline == "collector_down" else _blackhole()
            base = f"http://127.0.0.1:{port}"
            downstream.append(
                BatchSpanProcessor(
                    OTLPSpanExporter(endpoint=f"{base}/v1/traces", timeout=1),
                    schedule_delay_millis=200,
                )
            )
            readers.append(
                PeriodicExportingMetricReader(
                    OTLPMetricExporter(endpoint=f"{base}/v1/metrics", timeout=1),
                    export_interval_millis=300,
                    export_timeout_millis=1000,
                )
            )
        if pipeline == "downstream_raises":
            downstream.append(Raising())
        downstream.append(SimpleSpanProcessor(self.exporter))
        self.meters = MeterProvider(metric_readers=readers)
        processor = omh.McpHealthSpanProcessor(downstream[0], meter_provider=self.meters)
        for extra in downstream[1:]:
            processor.add_downstream(extra)
        self.provider = TracerProvider()
        self.provider.add_span_processor(processor)
        omh.McpHealthInstrumentor().instrument(
            tracer_provider=self.provider, meter_provider=self.meters
        )

    def take(self, logs: Records) -> dict[str, Any]:
        spans = self.exporter.get_finished_spans()
        self.exporter.clear()
        span_json = "\n".join(s.to_json() for s in spans)
        data = self.reader.get_metrics_data()
        metric_json = data.to_json() if data is not None else ""
        records, logs.records = logs.records, []
        ours = "\n".join(
            t for n, t in records if n.split(".")[0] in ("otel_mcp_health", "opentelemetry")
        )
        others = "\n".join(
            t for n, t in records if n.split(".")[0] not in ("otel_mcp_health", "opentelemetry")
        )
        return {
            "spans": [
                {
                    "name": s.name[:80],
                    "name_len": len(s.name),
                    "verdict": (s.attributes or {}).get("mcp_health.verdict"),
                    "reason": (s.attributes or {}).get("mcp_health.reason"),
                    "catalog": (s.attributes or {}).get("mcp_health.catalog.verdict"),
                    "catalog_reason": (s.attributes or {}).get("mcp_health.catalog.reason"),
                    "effect_unknown": (s.attributes or {}).get("mcp_health.effect.unknown"),
                    "retry": (s.attributes or {}).get("mcp_health.retry.unreconciled"),
                    "outcome_reason": (s.attributes or {}).get("mcp_health.outcome.reason"),
                    "bytes": len(s.to_json()),
                }
                for s in spans
            ],
            "exported_bytes": len(span_json) + len(metric_json),
            "max_label_len": _max_label_len(metric_json),
            "leaks": {
                "exported": [c for c in CANARIES if c in span_json or c in metric_json],
                "our_logs": [c for c in CANARIES if c in ours],
                "other_logs": [c for c in CANARIES if c in others],
            },
            "our_log_records": ours.count("\n") + 1 if ours else 0,
        }


def _max_label_len(metric_json: str) -> int:
    if not metric_json:
        return 0
    longest = 0
    for rm in json.loads(metric_json)["resource_metrics"]:
        for sm in rm["scope_metrics"]:
            for metric in sm["metrics"]:
                for point in metric["data"].get("data_points", []):
                    for value in point["attributes"].values():
                        longest = max(longest, len(str(value)))
    return longest


# ---- servers ----------------------------------------------------------------------------------
def stdio(catalog: str = "normal") -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[HOSTILE, "stdio", catalog])


def raw_stdio(fault: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[HOSTILE, "raw-stdio", fault])


_RAW: hostile.RawHttp | None = None
_HTTP: str | None = None


def raw_http(fault: str) -> Any:
    global _RAW  # noqa: PLW0603 - one scripted peer per process
    if _RAW is None:
        _RAW = hostile.RawHttp()
    return _transport(_RAW.url(fault))


def _transport(url: str) -> Any:
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {CANARY_TOKEN}"}, timeout=5)
    return streamable_http_client(url, http_client=client)


def http() -> Any:
    """The hostile server over streamable HTTP (uvicorn on 127.0.0.1, in a thread)."""
    global _HTTP  # noqa: PLW0603 - one server per process
    if _HTTP is None:
        import uvicorn

        port = _closed_port()
        app = hostile.build_server().streamable_http_app(host="127.0.0.1")
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
        threading.Thread(target=server.run, daemon=True).start()
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        _HTTP = f"http://127.0.0.1:{port}/mcp"
    return _transport(_HTTP)


# ---- the faults -------------------------------------------------------------------------------
async def call(host: Host, client: Any, tool: str = "echo", wait: float | None = None) -> None:
    await host.step(
        f"call {tool[:20]}", lambda: client.call_tool(tool, ARGS, read_timeout_seconds=wait)
    )


async def list_all(host: Host, client: Any, max_pages: int = 1200) -> None:
    async def walk() -> tuple[int, int, str | None]:
        cursor, pages, tools = None, 0, 0
        while pages < max_pages:
            page = await client.list_tools(cursor=cursor)
            pages, tools, cursor = pages + 1, tools + len(page.tools), page.next_cursor
            if cursor is None:
                break
        return pages, tools, None if cursor is None else "more"

    await host.step("list", walk)


def listed_then(catalog: str, tool: str = "echo", where: str = "inproc", **kw: Any) -> Any:
    async def fault(host: Host) -> None:
        async def body(client: Any) -> None:
            await list_all(host, client, kw.get("max_pages", 1200))
            await call(host, client, tool, kw.get("timeout"))

        server = {
            "inproc": lambda: hostile.build_server(catalog),
            "stdio": lambda: stdio(catalog),
            "http": http,
        }[where]()
        await host.session(server, body, **({"mode": "legacy"} if where == "stdio" else {}))

    return fault


def host_cancel(where: str) -> Any:
    async def fault(host: Host) -> None:
        async def body(client: Any) -> None:
            await list_all(host, client)
            for attempt in ("first", "retry"):  # an agent deadline, then the same call again

                async def bounded() -> bool:
                    with anyio.move_on_after(0.5) as scope:
                        await client.call_tool("hang", ARGS)
                    return scope.cancelled_caught

                await host.step(f"cancelled {attempt}", bounded)

        server = {"inproc": hostile.build_server, "stdio": stdio, "http": http}[where]()
        await host.session(server, body, **({"mode": "legacy"} if where == "stdio" else {}))

    return fault


class CustomBase(BaseException):
    """An application's own ``BaseException`` subclass, for the verifier that raises one."""


def _raiser(kind: type[BaseException]) -> Callable[[Any], bool]:
    def verifier(call: Any) -> bool:
        raise kind(f"{CANARY_ARG} {call.arguments} {call.text}")

    return verifier


def _hang(call: Any) -> bool:
    threading.Event().wait()
    return True


VERIFIERS: dict[str, Callable[[Any], Any]] = {
    "verifier_raises_exception": _raiser(RuntimeError),
    "verifier_raises_cancelled": _raiser(asyncio.CancelledError),
    "verifier_raises_system_exit": _raiser(SystemExit),
    "verifier_raises_keyboard_interrupt": _raiser(KeyboardInterrupt),
    "verifier_raises_generator_exit": _raiser(GeneratorExit),
    "verifier_raises_custom_base": _raiser(CustomBase),
    "verifier_hangs": _hang,
    "verifier_garbage": lambda call: {"receipt": call.text},
    "verifier_malformed": lambda call: omh.Receipt("passed", f"judge {call.text}"),  # type: ignore[arg-type]
}


def with_verifier(name: str) -> Any:
    async def fault(host: Host) -> None:
        omh.register_verifier("echo", VERIFIERS[name], timeout=0.5)
        try:
            await listed_then("normal")(host)
            await host.step("flush", lambda: anyio.to_thread.run_sync(omh.flush_receipts, 5.0))
        finally:
            omh.unregister_verifier("echo")

    return fault


def raw(where: str, fault_name: str, list_first: bool = False) -> Any:
    async def fault(host: Host) -> None:
        async def body(client: Any) -> None:
            await call(host, client, "echo", wait=1.0)

        server = raw_stdio(fault_name) if where == "stdio" else raw_http(fault_name)
        await host.session(server, body, mode="legacy")

    return fault


async def refused(host: Host) -> None:
    async def body(client: Any) -> None:
        await call(host, client)

    await host.session(_transport(f"http://127.0.0.1:{_closed_port()}/mcp"), body, mode="legacy")


def high_level(where: str, tool: str) -> Any:
    async def fault(host: Host) -> None:
        async def body(client: Any) -> None:
            await list_all(host, client)
            await call(host, client, tool)

        server = {"inproc": hostile.build_mcpserver, "stdio": lambda: stdio("mcpserver")}[where]()
        await host.session(server, body, **({"mode": "legacy"} if where == "stdio" else {}))

    return fault


#: Misuse and undigestable installed sets given to ``record_installed_tools``.
INSTALLED: dict[str, Callable[[], list[Any]]] = {
    "installed_names": lambda: ["echo", "bad_schema"],
    "installed_nan": lambda: [{"name": "echo", "inputSchema": {"default": float("nan")}}],
    "installed_deep": lambda: [{"name": "echo", "inputSchema": hostile.nested(2000)}],
    "installed_nameless": lambda: [{"description": "no name", "inputSchema": {}}],
}


def installed(name: str) -> Any:
    async def fault(host: Host) -> None:
        async def body(client: Any) -> None:
            await list_all(host, client)

            async def record() -> None:
                omh.record_installed_tools(client, INSTALLED[name]())

            await host.step("record_installed_tools", record)
            await call(host, client)

        await host.session(hostile.build_server(), body)

    return fault


FAULTS: dict[str, Callable[[Host], Awaitable[None]]] = {
    "echo": listed_then("normal"),
    "schema_violation": listed_then("normal", "bad_schema"),
    "error_message": listed_then("normal", "raise_error"),
    "huge_page": listed_then("huge_page"),
    "long_chain": listed_then("long_chain"),
    "loop_chain": listed_then("loop_chain", max_pages=60),
    "nan": listed_then("nan"),
    "deep_nesting": listed_then("deep"),
    "huge_name": listed_then("huge_name", HUGE_NAME),
    "hang": listed_then("normal", "hang", timeout=0.5),
    "host_cancel": host_cancel("inproc"),
    **{name: with_verifier(name) for name in VERIFIERS},
    "mcpserver_raises": high_level("inproc", "leak"),
    "mcpserver_huge_result": high_level("inproc", "huge"),
    **{name: installed(name) for name in INSTALLED},
    "stdio_echo": listed_then("normal", where="stdio"),
    "stdio_mcpserver_raises": high_level("stdio", "leak"),
    "stdio_crash": listed_then("normal", "crash", where="stdio"),
    "stdio_hang": listed_then("normal", "hang", where="stdio", timeout=0.5),
    "stdio_host_cancel": host_cancel("stdio"),
    "stdio_garbage": raw("stdio", "garbage"),
    "stdio_nonutf8": raw("stdio", "nonutf8"),
    "stdio_invalid_jsonrpc": raw("stdio", "invalid_jsonrpc"),
    "stdio_schema": raw("stdio", "schema"),
    "http_echo": listed_then("normal", where="http"),
    "http_error_message": listed_then("normal", "raise_error", where="http"),
    "http_hang": listed_then("normal", "hang", where="http", timeout=0.5),
    "http_host_cancel": host_cancel("http"),
    "http_garbage": raw("http", "garbage"),
    "http_nonutf8": raw("http", "nonutf8"),
    "http_invalid_jsonrpc": raw("http", "invalid_jsonrpc"),
    "http_schema": raw("http", "schema"),
    "http_cut_json": raw("http", "cut_json"),
    "http_cut_sse": raw("http", "cut_sse"),
    "http_401": raw("http", "http401"),
    "http_403": raw("http", "http403"),
    "http_500": raw("http", "http500"),
    "http_503": raw("http", "http503"),
    "refused_port": refused,
}


async def main(mode: str, pipeline: str, names: list[str]) -> None:
    logs = Records()
    logging.getLogger().addHandler(logs)
    logging.getLogger().setLevel(logging.DEBUG)
    telemetry = Telemetry(pipeline) if mode == "instrumented" else None
    report: dict[str, Any] = {}
    for name in names:
        host = Host()
        started = time.monotonic()
        try:
            with anyio.fail_after(FAULT_BOUND_S):
                await FAULTS[name](host)
            hung = False
        except TimeoutError:
            hung = True
        entry: dict[str, Any] = {
            "steps": host.steps,
            "elapsed_s": round(time.monotonic() - started, 3),
            "hung": hung,
        }
        if telemetry is not None:
            await anyio.to_thread.run_sync(omh.flush_receipts, 5.0)
            entry["telemetry"] = telemetry.take(logs)
        else:
            records, logs.records = logs.records, []
            text = "\n".join(t for _, t in records)
            entry["log_canaries"] = [c for c in CANARIES if c in text]
        report[name] = entry
    logging.getLogger().removeHandler(logs)
    print(json.dumps({"faults": report, "done_at": time.monotonic()}), flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3:])
