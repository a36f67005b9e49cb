"""An instrumented agent for the pipeline test: real MCP servers, every incident kind, OTLP out.

Run it under ``opentelemetry-instrument`` with ``OTEL_PYTHON_CONFIGURATOR=mcp_health`` (the
zero-code set-up a user runs), so its spans reach the collector with their verdicts and its
``mcp_health.*`` metrics are exported too. It has no telemetry code and registers no outcome
verifier: ``OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES`` names the policy file ``outcomes.toml``
beside it (docs/outcomes.md), which verifies the demo's report tools and declares read-only
lookups ``not_required``::

    OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES=tests/pipeline/outcomes.toml \
    opentelemetry-instrument python -m tests.pipeline.agent_scenarios incidents

(from the repository root, so it imports ``tests.*`` like the tests do).

Groups (one per run, a process each: the supported MCP versions are process-wide):

``incidents``     over streamable HTTP, in-process and against a closed port: needs_auth with a
                  required scope (403 ``insufficient_scope``), protocol_error (-32602), a tool
                  failure (isError), stale_catalog (list_changed, then a call before re-listing;
                  twice, with a slow re-list so the convergence lag exceeds a small objective),
                  false_success and effect_unknown (demo tools with the policy's file
                  verifier), transport errors (closed port) and a call that stalls past the idle
                  window.
``incompatible``  a session on a version the client declares unsupported.
``never_refreshes`` a 2026-07-28 agent (no ``subscriptions/listen``, so nothing hears a change)
                  that lists once and calls for ``--seconds``: run with a short maximum age,
                  its calls read ``catalog_refresh_overdue``.
``healthy``       healthy calls only, for ``--seconds`` (the alerts must resolve afterwards).

Canaries (``mcp_health_servers.CANARIES`` and the demo's) ride in arguments, results, a bearer
token and server error messages; the test asserts none leaves the collector.
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from tests.integration.mcp_health_servers import (
    CANARY_ARG,
    CANARY_TOKEN,
    build_server,
    serve_http,
)
from tests.integration.scenarios import Notifications, until_list_changed

from otel_mcp_health.demo import _server as demo_server  # the demo's MCP *server*

#: How long the stalled call hangs (the idle window is set far shorter by the test).
STALL_S = 10.0
#: How long a catalog stays stale before the client re-lists (above the test's lag objective).
RELIST_DELAY_S = 1.2
STEP_TIMEOUT_S = 20.0
#: Where the demo tools write: the directory outcomes.toml names literally (a policy's argument
#: fills a file name, never the directory: docs/outcomes.md#arguments-are-data).
PIPELINE_OUT = Path("/tmp/mcp-health-pipeline")  # noqa: S108 - a run gets its own directory in it


async def _quietly(step: Callable[[], Awaitable[Any]]) -> None:
    """Run one step; the failure is the point, and what the app sees is not ours to judge."""
    try:
        with anyio.fail_after(STEP_TIMEOUT_S):
            await step()
    except Exception as exc:
        print(f"  (step raised {type(exc).__name__}, as expected)", flush=True)


async def _list_all(client: Client) -> None:
    first = await client.list_tools()
    await client.list_tools(cursor=first.next_cursor)


def _file_args(workdir: Path, name: str) -> dict[str, str]:
    """The tool writes ``path``; the policy reads ``run`` and ``name`` under PIPELINE_OUT."""
    content = f"quarterly numbers {CANARY_ARG}"
    return {"path": str(workdir / name), "run": workdir.name, "name": name, "content": content}


async def _needs_auth(base: str) -> None:
    headers = {"Authorization": f"Bearer {CANARY_TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http_client,
        streamable_http_client(base + "/authz", http_client=http_client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()


async def _http_incidents(base: str) -> None:
    async with Client(base + "/mcp") as client:
        await _list_all(client)
        await _quietly(lambda: client.call_tool("bad_args", {"ticketId": CANARY_ARG}))
        await _quietly(lambda: client.call_tool("fail", {"q": CANARY_ARG}))
        await _quietly(lambda: client.call_tool("lookup", {"q": CANARY_ARG}))
    await _quietly(lambda: _needs_auth(base))


async def _stalled(base: str) -> None:
    async with Client(base + "/mcp") as client:
        await _list_all(client)
        await _quietly(lambda: client.call_tool("slow", {"seconds": STALL_S, "q": CANARY_ARG}))


async def _stale_catalog() -> None:
    notifications = Notifications()
    async with Client(build_server(), mode="legacy", message_handler=notifications) as client:
        await _list_all(client)
        for _ in range(2):
            notifications.list_changed = anyio.Event()
            await until_list_changed(client, notifications)
            await _quietly(lambda: client.call_tool("lookup", {"q": CANARY_ARG}))
            await anyio.sleep(RELIST_DELAY_S)
            await _list_all(client)
            await _quietly(lambda: client.call_tool("lookup", {"q": CANARY_ARG}))


async def _outcomes(workdir: Path) -> None:
    async with Client(demo_server.build_server(), mode="legacy") as client:
        await _list_all(client)
        await _quietly(lambda: client.call_tool("export_report", _file_args(workdir, "honest.txt")))
        await _quietly(
            lambda: client.call_tool("export_report_broken", _file_args(workdir, "broken.txt"))
        )
        await _quietly(
            lambda: client.call_tool(
                "publish_slow", _file_args(workdir, "slow.txt"), read_timeout_seconds=0.3
            )
        )


async def _transport_errors() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        for _ in range(3):

            async def handshake() -> None:
                async with Client(url):
                    pass

            await _quietly(handshake)
            await anyio.sleep(0.5)


async def incidents() -> None:
    await anyio.Path(PIPELINE_OUT).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="run-", dir=PIPELINE_OUT) as workdir:
        async with serve_http(build_server()) as base, anyio.create_task_group() as tg:
            tg.start_soon(_stalled, base)
            tg.start_soon(_http_incidents, base)
            tg.start_soon(_stale_catalog)
            tg.start_soon(_outcomes, Path(workdir))
            tg.start_soon(_transport_errors)


async def incompatible() -> None:
    async with Client(build_server(), mode="legacy") as client:
        await _list_all(client)
        await _quietly(lambda: client.call_tool("lookup", {"q": CANARY_ARG}))


async def never_refreshes(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    async with Client(build_server()) as client:
        await _list_all(client)
        while time.monotonic() < deadline:
            await _quietly(lambda: client.call_tool("lookup", {"q": CANARY_ARG}))
            await anyio.sleep(0.5)


async def healthy(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    async with serve_http(build_server()) as base, Client(base + "/mcp") as client:
        await _list_all(client)
        while time.monotonic() < deadline:
            await client.call_tool("lookup", {"q": CANARY_ARG})
            await anyio.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    groups = ("incidents", "incompatible", "never_refreshes", "healthy")
    parser.add_argument("group", choices=groups)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    started = time.monotonic()
    if args.group == "incidents":
        anyio.run(incidents)
    elif args.group == "incompatible":
        anyio.run(incompatible)
    elif args.group == "never_refreshes":
        anyio.run(never_refreshes, args.seconds)
    else:
        anyio.run(healthy, args.seconds)
    print(f"{args.group}: done in {time.monotonic() - started:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
