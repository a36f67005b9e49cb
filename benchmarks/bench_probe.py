"""Benchmark: ``otel-mcp-health probe`` — probes per second on one core, and requests per probe.

Run ``python benchmarks/bench_probe.py`` (``make bench`` runs it). The server is the benchmarks'
own (``_server.py``, a catalog of ``PAGES`` tools listed one per page, a cheap tool) served over
streamable HTTP and SSE by uvicorn on a thread of this process (127.0.0.1, an ephemeral port), so
the CPU time of this process is the client's, the prober's and the server's together: probes per
CPU-second is probes per second on one core, server included. Over stdio the server is a child
(this script, ``--stdio``).

Probes per second: ``PROBES`` probes in a row of one configured target (the cache is off:
``min_interval`` is a microsecond), each one a whole probe (handshake, every page, the canary
call, the session closed, the report built), against a baseline measured in the same round:
the bare ``mcp`` client sending the same requests without our instrumentation, processor or
report. Rounds alternate the two; the first round warms up and is not reported.

Requests per probe: the JSON-RPC messages each probe sent, counted on the transport's write
stream, per target and era, against the design's bound (2026-07-28: ``server/discover`` + pages +
call; older: ``initialize`` + ``notifications/initialized`` + pages + call).
Results: ``benchmarks/.results/probe.md``.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from starlette.applications import Starlette
from starlette.routing import Mount

import _server
from _common import HERE, Report, ratio, spread
from otel_mcp_health.probe._config import parse_config
from otel_mcp_health.probe._service import ProbeService

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "6"))
PROBES = int(os.environ.get("BENCH_PROBES", "40"))
PAGES = 3


async def _call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text="3 articles found")])


def _bench_server() -> Server[Any]:
    """The bench server's paged catalog, with a tool call that answers every listed tool."""
    return Server(
        "bench-server", version="1.0.0", on_list_tools=_server._paged(PAGES), on_call_tool=_call
    )


def _serve() -> str:
    """The bench server over streamable HTTP on a thread of this process; its base URL."""
    app = Starlette(routes=[Mount("/", app=_bench_server().streamable_http_app(host="127.0.0.1"))])
    inner = app.routes[0].app  # type: ignore[attr-defined]
    app.router.lifespan_context = inner.router.lifespan_context
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _config(base: str) -> Any:
    stdio = [sys.executable, str(HERE / "bench_probe.py"), "--stdio"]
    canary = {"tool": "tool_00000", "arguments": {"query": "otel"}}
    target = {"transport": "streamable_http", "url": f"{base}/mcp", "canary": canary}
    return parse_config(
        {
            "probe": {"min_interval": 1e-6, "max_concurrent": 1},
            "module": {"auto": {"timeout": 30}, "legacy": {"era": "legacy", "timeout": 30}},
            "target": [
                {"name": "http", **target},
                {"name": "http-legacy", **target, "module": "legacy"},
                {"name": "stdio", "transport": "stdio", "command": stdio, "canary": canary},
            ],
        },
        "bench",
    )


def _bare(url: str) -> None:
    """The same requests with the bare client: discover, every page, the call, closed."""

    async def session() -> None:
        async with Client(streamable_http_client(url), mode="auto", cache=None) as client:
            cursor: str | None = None
            while True:
                page = await client.list_tools(cursor=cursor)
                cursor = page.next_cursor
                if cursor is None:
                    break
            await client.call_tool("tool_00000", {"query": "otel"})

    anyio.run(session)


def _timed(action: Callable[[], None]) -> tuple[float, float]:
    """(CPU seconds of this process, wall seconds) of ``PROBES`` runs of ``action``."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(PROBES):
        action()
    return time.process_time() - cpu, time.perf_counter() - wall


def _rates(base: str) -> dict[str, list[float]]:
    """Per round: probe and bare-client rates per CPU-second and per wall-second."""
    rates: dict[str, list[float]] = {"probe": [], "bare": [], "probe wall": [], "bare wall": []}
    for round_ in range(ROUNDS + 1):
        bare_cpu, bare_wall = _timed(lambda: _bare(f"{base}/mcp"))
        service = ProbeService(_config(base))
        try:
            probe_cpu, probe_wall = _timed(lambda: service.probe("http"))  # noqa: B023
        finally:
            service.close()
        if round_ == 0:
            continue  # warm-up
        for key, seconds in (
            ("probe", probe_cpu),
            ("bare", bare_cpu),
            ("probe wall", probe_wall),
            ("bare wall", bare_wall),
        ):
            rates[key].append(PROBES / seconds)
    return rates


def _requests(base: str) -> list[list[str]]:
    rows: list[list[str]] = []
    service = ProbeService(_config(base))
    try:
        for name, era, bound in (
            ("http", "2026-07-28", 1 + PAGES + 1),
            ("http-legacy", "older (initialize)", 2 + PAGES + 1),
            ("stdio", "2026-07-28", 1 + PAGES + 1),
        ):
            sent: Counter[str] = Counter()
            for _ in range(3):
                result = service.probe(name)
                sent = result.run.requests
                assert result.success, result.report
            total = sum(sent.values())
            shown = ", ".join(f"{method} {count}" for method, count in sorted(sent.items()))
            verdict = "within" if total <= bound else "OVER"
            rows.append([name, era, shown, str(total), f"{bound} ({verdict})"])
    finally:
        service.close()
    return rows


def main() -> None:
    base = _serve()
    report = Report("otel-mcp-health probe: probes per second and requests per probe", "probe")
    rates = _rates(base)
    report.add(
        "",
        f"- {PROBES} probes in a row per round, {ROUNDS} rounds after a warm-up; streamable HTTP "
        f"server on a thread of this process, {PAGES} pages, one canary call",
    )
    report.table(
        ["measure", "median (min-max)"],
        [
            ["probes per CPU-second (one core, server included)", spread(rates["probe"])],
            ["bare mcp client, same requests, per CPU-second", spread(rates["bare"])],
            ["probe CPU against the bare client's", ratio(rates["bare"], rates["probe"])],
            ["probes per wall-second, one at a time", spread(rates["probe wall"])],
            ["bare mcp client per wall-second, one at a time", spread(rates["bare wall"])],
        ],
    )
    report.add("Requests per probe (the third probe of each target: the era already known):")
    report.table(
        ["target", "era", "JSON-RPC messages sent", "total", "design bound"], _requests(base)
    )
    report.write()


async def _serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = _bench_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if sys.argv[1:] == ["--stdio"]:
        anyio.run(_serve_stdio)
    else:
        main()
