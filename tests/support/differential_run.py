"""The representative run of the differential: one agent's session on every transport, dumped.

``python -m tests.support.differential_run`` (from the checkout root) runs, in this fresh process,
the real ``mcp`` client of the installed SDK line against the reference servers (run by
``MCP_HEALTH_SERVER_PYTHON``, as in the matrix), instrumented by :class:`McpHealthInstrumentor`
with an approved catalog and an outcome policy, every span judged by
:class:`McpHealthSpanProcessor` in a real OpenTelemetry pipeline; then prints the dump of every
exported span, metric point and log record (``differential_dump``) as text on stdout.

One process per run because instrumentation is global: a fresh interpreter starts from nothing
patched and nothing registered, so two runs of the same code print the same dump. Every step
runs in sequence, one session at a time, so export order is the order of the steps.

The steps, chosen to reach most of what the instrumentation and the processor export:

* in-process: the line's in-memory session, a healthy call and an ``isError`` call;
* stdio: a call before discovery, paged discovery, every outcome (verified by code, by the
  policy, refuted, ``isError``, JSON-RPC error, output-schema violation, unknown tool, timeout,
  progress, elicitation), a ``list_changed`` and the re-list, a server that exits mid-call;
* streamable HTTP: discovery approved against the pins, a call of an unapproved tool;
* SSE: a network session and a call;
* refusals: a 401 and a 503 handshake, a refused SSE connect, a closed port.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import tempfile
from collections.abc import Awaitable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
from opentelemetry import trace

from otel_mcp_health import McpHealthInstrumentor
from otel_mcp_health.core.pins import PinFile, pin_server, render_pins
from otel_mcp_health.instrumentation import flush_receipts
from otel_mcp_health.verifiers import register_verifier
from tests.support.differential_dump import Masks, dump, render
from tests.support.in_process_1x import in_process_server_1x
from tests.support.matrix_drivers import (
    INTEGRATION,
    MCP_MAJOR,
    REFERENCE_HTTP,
    Driver,
    Events,
    SessionDriver,
    connect,
    http_server,
)
from tests.support.processor_helpers import Pipeline

#: The secret in the SSE gateway's URL (never exported: the dump would show it).
SECRET = "differential-ssekey-4f0b2e"
#: A tool the pins leave out: its discovery reads ``drifted``, its call ``tool_unapproved``.
UNPINNED = "typed_bad"
#: The outcome policy: ``lookup`` needs no verifier (a read), so its calls can be green.
POLICY = '[[outcome]]\ntool = "lookup"\nverify = "not_required"\n'
SLOW = {"seconds": 30}


async def attempt(step: Awaitable[Any]) -> None:
    """A step whose failure (an exception the application sees) is part of the run."""
    try:
        with anyio.fail_after(30):
            await step
    except Exception:  # the application's failure is the scenario
        pass


class _Records(logging.Handler):
    """The product's log records, in order (level and message)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.levelname, record.getMessage()))


@contextmanager
def _servers() -> Iterator[tuple[str, str]]:
    """The reference server over streamable HTTP and the SSE gateway, each in its own process."""
    with ExitStack() as stack:
        reference = stack.enter_context(http_server(str(REFERENCE_HTTP)))
        gateway = stack.enter_context(http_server(str(INTEGRATION / "gateway_http.py"), SECRET))
        yield reference, gateway


async def _pins(reference: str, directory: Path) -> Path:
    """The approved catalog: the reference server as this line's client lists it (before
    instrumenting), all but :data:`UNPINNED`."""
    async with connect("session", "http", reference + "/mcp", Events()) as agent:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            from mcp import types

            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await agent.session.list_tools(params=params)
            tools += [
                t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools
            ]
            cursor = getattr(page, "nextCursor" if MCP_MAJOR == 1 else "next_cursor")
            if cursor is None:
                break
    kept = [t for t in tools if t["name"] != UNPINNED]
    path = directory / "approved.toml"
    path.write_text(render_pins(PinFile((pin_server(kept, name="health-test-server"),))))
    return path


async def in_process() -> None:
    if MCP_MAJOR == 1:
        from mcp.shared.memory import create_connected_server_and_client_session

        async with create_connected_server_and_client_session(in_process_server_1x()) as s:
            await _in_process_calls(SessionDriver(Events(), s))
        return
    from mcp import Client

    from tests.integration.mcp_health_servers import build_server

    async with Client(build_server()) as client:
        await _in_process_calls(SessionDriver(Events(), client.session))


async def _in_process_calls(agent: Driver) -> None:
    await agent.list_all()
    await verified(agent, "create_ticket", {"title": "t", "priority": "p"})
    await attempt(agent.call("fail", {}))


async def stdio() -> None:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        pass

    async with connect("session", "stdio", None, Events()) as agent:
        await attempt(agent.call("lookup", {}))  # before discovery
        await agent.list_all()
        await verified(agent, "create_ticket", {"title": "t", "priority": "p"})
        await verified(agent, "typed", {})
        await attempt(agent.call("fail", {}))
        await attempt(agent.call("bad_args", {"ticketId": "x"}))
        await attempt(agent.call("typed_bad", {}))
        await attempt(agent.call("slow", SLOW, read_timeout=0.2))
        await attempt(agent.call("progress", {}, progress=on_progress))
        await attempt(agent.call("ask", {}))
        await attempt(agent.call("nope", {}))  # stale until the next discovery
        await agent.until_list_changed()
        await attempt(agent.call("lookup", {}))
        await agent.list_all()
        await attempt(agent.call("lookup", {}))
        await attempt(agent.call("crash", {}))


async def streamable_http(reference: str) -> None:
    async with connect("session", "http", reference + "/mcp", Events()) as agent:
        await agent.list_all()
        await verified(agent, "create_ticket", {"title": "t", "priority": "p"})
        await attempt(agent.call("typed_bad", {}))
        await attempt(agent.call("lookup", {}))


async def sse(gateway: str) -> None:
    from mcp import ClientSession
    from mcp.client.sse import sse_client

    async with (
        sse_client(f"{gateway}/sse?api_key={SECRET}") as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        agent = SessionDriver(Events(), session)
        await agent.list_all()
        await verified(agent, "create_ticket", {"title": "t", "priority": "p"})


async def refusals(reference: str, gateway: str, closed: str) -> None:
    for url in (reference + "/authn", reference + "/down", closed):

        async def handshake(url: str = url) -> None:
            async with connect("session", "http", url, Events()):
                pass

        await attempt(handshake())

    async def refused_sse() -> None:
        from mcp import ClientSession
        from mcp.client.sse import sse_client

        async with (
            sse_client(gateway + "/sse-authn") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()

    await attempt(refused_sse())


async def verified(agent: Driver, name: str, arguments: dict[str, Any]) -> None:
    """A call whose tool has an outcome verifier: its span ends when the receipt arrives, so
    the run waits for it before the next step (export order stays the order of the steps)."""
    await attempt(agent.call(name, arguments))
    await flush()


async def flush() -> None:
    """Every outcome verifier's receipt delivered (the verified call's span has ended)."""
    assert await anyio.to_thread.run_sync(flush_receipts, 10.0)


def _closed_port() -> str:
    """A URL on a port nothing listens on (bound once by the OS, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


def main() -> None:
    records = _Records()
    logger = logging.getLogger("otel_mcp_health")
    logger.addHandler(records)
    logger.setLevel(logging.DEBUG)
    with tempfile.TemporaryDirectory() as tmp, _servers() as (reference, gateway):
        directory = Path(tmp)
        pins = anyio.run(_pins, reference, directory)
        policy = directory / "outcomes.toml"
        policy.write_text(POLICY, encoding="utf-8")
        os.environ["OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES"] = str(policy)
        register_verifier("create_ticket", lambda call: True, method="destination_query")
        register_verifier("typed", lambda call: False, method="file_digest")

        pipeline = Pipeline.build()
        # the SDK's own spans (mcp 2.x traces with the global provider) reach the processor too
        trace.set_tracer_provider(pipeline.provider)
        instrumentor = McpHealthInstrumentor()
        instrumentor.instrument(
            tracer_provider=pipeline.provider,
            meter_provider=pipeline.meters,
            approved_catalog=str(pins),
        )
        closed = _closed_port()

        async def run() -> None:
            with anyio.fail_after(120):
                await in_process()
                await stdio()
                await streamable_http(reference)
                await sse(gateway)
                await refusals(reference, gateway, closed)
                await flush()

        try:
            anyio.run(run)
        finally:
            instrumentor.uninstrument()
        pipeline.provider.force_flush()
        masks = Masks(
            ports=[_port(reference), _port(gateway), _port(closed)], paths=[tmp, str(INTEGRATION)]
        )
        out = dump(pipeline, records.records, masks)
        pipeline.provider.shutdown()
    sys.stdout.write(render(out))


def _port(url: str) -> int:
    return int(url.removeprefix("http://127.0.0.1:").split("/")[0])


if __name__ == "__main__":
    main()
