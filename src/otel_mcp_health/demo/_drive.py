"""Driving the scenarios: the demo's three MCP sessions (HTTP, in-process, stdio).

Each session runs under a root span and each scenario under a child span of its own (name
``demo <label>``, attribute :data:`~._scenarios.SCENARIO_ATTRIBUTE`), so
:mod:`._verdict_table` can tell a scenario's MCP spans apart from the next one's.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from opentelemetry.trace import Tracer

import otel_mcp_health
from otel_mcp_health.demo._scenarios import (
    CANARY,
    HTTP_AUTHN,
    HTTP_BROKEN,
    HTTP_CATALOG,
    HTTP_CLOSED,
    HTTP_NO_VERIFIER,
    HTTP_POLICY,
    HTTP_TICKET,
    HTTP_UNKNOWN_TOOL,
    HTTP_WRONG_ARGS,
    INPROC_ANNOUNCE,
    INPROC_RECONCILED,
    INPROC_RELIST,
    INPROC_STALE,
    INPROC_TIMEOUT,
    SCENARIO_ATTRIBUTE,
    STDIO_EXPORT,
    Scenario,
)
from otel_mcp_health.demo._server import build_server, serve_http
from otel_mcp_health.instrumentation import flush_receipts, report_reconciliation

#: The read timeout of the ``publish_slow`` call (the server sleeps far longer).
SLOW_CALL_TIMEOUT_S: Final = 0.3
#: Upper bound of one scenario, and of the wait for its outcome receipts.
STEP_TIMEOUT_S: Final = 10.0
RECEIPT_WAIT_S: Final = 5.0
#: Upper bound of one session (its scenarios, plus opening and closing it).
SESSION_TIMEOUT_S: Final = 30.0


@dataclass
class Demo:
    """Runs each scenario under a span of its own, so its MCP spans can be told apart."""

    tracer: Tracer
    workdir: Path
    errors: dict[str, str] = field(default_factory=dict)
    _files: int = 0

    def file_arguments(self) -> dict[str, Any]:
        """Arguments of a file-writing tool: a fresh path in the demo's temporary directory."""
        self._files += 1
        path = self.workdir / f"report-{self._files}.txt"
        return {"path": str(path), "content": f"quarterly numbers {CANARY}"}

    @contextmanager
    def session(self, label: str) -> Iterator[None]:
        """A root span around one MCP session, so its stray spans share a trace."""
        with self.tracer.start_as_current_span(
            f"demo {label}", attributes={SCENARIO_ATTRIBUTE: label}
        ):
            yield

    async def step(self, scenario: Scenario, body: Callable[[], Awaitable[object]]) -> None:
        """Run ``body`` under the scenario's span, then wait for its outcome receipts.

        ``body`` may raise when the failure is the point (a timeout, a refused handshake): the
        application sees its usual exceptions, unchanged, and the verdicts on the spans are what
        the demo checks. The exception is not printed: its message can echo arguments.
        """
        with self.tracer.start_as_current_span(
            f"demo {scenario.label}", attributes={SCENARIO_ATTRIBUTE: scenario.label}
        ):
            with suppress(Exception), anyio.fail_after(STEP_TIMEOUT_S):
                await body()
            # Receipts end their spans from the verifiers' worker threads: wait (bounded).
            await anyio.to_thread.run_sync(flush_receipts, RECEIPT_WAIT_S)

    async def guarded(self, label: str, session: Callable[[], Awaitable[None]]) -> None:
        """Run one session's scenarios; a session that cannot even start is recorded."""
        with self.session(label):
            try:
                with anyio.fail_after(SESSION_TIMEOUT_S):
                    await session()
            except Exception as exc:  # noqa: BLE001 - one failed scenario is reported; the others still run
                self.errors[label] = type(exc).__name__


async def _list_all(client: Client) -> None:
    first = await client.list_tools()
    await client.list_tools(cursor=first.next_cursor)


class _ListChanged:
    """A ``message_handler`` that notices ``notifications/tools/list_changed``."""

    def __init__(self) -> None:
        self.arrived = anyio.Event()

    async def __call__(self, message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.arrived.set()


async def _http_sessions(demo: Demo) -> None:
    async with serve_http(build_server()) as base:
        async with Client(f"{base}/mcp") as client:

            async def catalog_then_export() -> None:
                await _list_all(client)
                await client.call_tool("export_report", demo.file_arguments())

            await demo.step(HTTP_CATALOG, catalog_then_export)
            await demo.step(
                HTTP_BROKEN,
                lambda: client.call_tool("export_report_broken", demo.file_arguments()),
            )
            await demo.step(
                HTTP_TICKET, lambda: client.call_tool("create_ticket", {"title": CANARY})
            )
            await demo.step(
                HTTP_WRONG_ARGS, lambda: client.call_tool("search", {"query": {"text": CANARY}})
            )
            await demo.step(HTTP_POLICY, lambda: client.call_tool("search", {"query": CANARY}))
            await demo.step(
                HTTP_NO_VERIFIER, lambda: client.call_tool("notify_team", {"message": CANARY})
            )
            await demo.step(
                HTTP_UNKNOWN_TOOL, lambda: client.call_tool("export_reports", {"path": CANARY})
            )

        async def handshake(url: str) -> None:
            async with Client(url):
                pass

        await demo.step(HTTP_AUTHN, lambda: handshake(f"{base}/authn"))
    with _closed_port() as port:
        await demo.step(HTTP_CLOSED, lambda: handshake(f"http://127.0.0.1:{port}/mcp"))


@contextmanager
def _closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections: bound (nobody else gets it), not listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        yield port


async def _in_process_session(demo: Demo) -> None:
    # The legacy (``initialize``) era: the server pushes list_changed without a subscription.
    list_changed = _ListChanged()
    async with Client(build_server(), mode="legacy", message_handler=list_changed) as client:
        slow = demo.file_arguments()

        async def catalog_then_silence() -> None:
            await _list_all(client)
            await client.call_tool("publish_slow", slow, read_timeout_seconds=SLOW_CALL_TIMEOUT_S)

        await demo.step(INPROC_TIMEOUT, catalog_then_silence)

        async def reconcile() -> None:
            # The destination query an operator would run: the file is there (the tool wrote
            # it before going silent). The verifier then checks it holds the promised bytes.
            committed = await anyio.Path(slow["path"]).is_file()
            report_reconciliation(client, "publish_slow", committed=committed, arguments=slow)

        await demo.step(INPROC_RECONCILED, reconcile)

        async def announce() -> None:
            await client.call_tool("announce_change", {})
            await list_changed.arrived.wait()

        await demo.step(INPROC_ANNOUNCE, announce)
        await demo.step(INPROC_STALE, lambda: client.call_tool("search", {"query": CANARY}))

        async def relist_then_search() -> None:
            await _list_all(client)
            await client.call_tool("search", {"query": CANARY})

        await demo.step(INPROC_RELIST, relist_then_search)


def _stdio_params() -> StdioServerParameters:
    # The child gets the SDK's minimal environment; PYTHONPATH makes this package importable
    # whether it is installed or run from a source tree.
    package_root = str(Path(otel_mcp_health.__file__).resolve().parents[1])
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "otel_mcp_health.demo._server", "--stdio"],
        env={"PYTHONPATH": package_root},
    )


async def _stdio_session(demo: Demo) -> None:
    async with Client(_stdio_params()) as client:

        async def catalog_then_export() -> None:
            await _list_all(client)
            await client.call_tool("export_report", demo.file_arguments())

        await demo.step(STDIO_EXPORT, catalog_then_export)


async def drive(demo: Demo) -> None:
    """Run the three sessions, one after the other; a session that fails is recorded."""
    await demo.guarded("http session", lambda: _http_sessions(demo))
    await demo.guarded("in-process session", lambda: _in_process_session(demo))
    await demo.guarded("stdio session", lambda: _stdio_session(demo))
