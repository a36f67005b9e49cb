"""What a run does to the server: handshake, discovery, watch, call (the real ``mcp`` client).

``check`` runs all of it (:func:`drive`); ``pin`` runs the discovery; ``probe`` runs the
discovery and the call with its own transports (:func:`discover`, :func:`call`,
:func:`run_bounded`). The driver only *acts* and counts what it did (pages, signals,
re-discoveries). Every verdict is judged by the span processor on the spans these actions
produce; the report reads it from there. The application-side view (exceptions, results) is never
printed: a server's error message or a tool's result may echo arguments or credentials.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from otel_mcp_health import flush_receipts, record_installed_tools
from otel_mcp_health.clientside.command_line import ERA_MODES, CheckOptions

#: Upper bound of the wait for an outcome verifier's receipt after the call returned.
RECEIPT_WAIT_S = 10.0

#: Time kept back from ``--timeout`` for the receipt and closing the session after a call.
CLOSE_RESERVE_S = 1.0

Progress = Callable[[str], None]


@dataclass
class Facts:
    """What the driver did and saw, beside the spans (counts and exception class names only)."""

    pages: int = 0
    tool_count: int = 0
    #: The tool names of the latest discovery that reached its last page (``None``: none did). A
    #: ``--call`` of any other name is a typo or a tool the server does not serve.
    tool_names: tuple[str, ...] | None = None
    #: The tool definitions of that same discovery (``otel-mcp-health pin`` pins them).
    tools: tuple[types.Tool, ...] | None = None
    #: ``notifications/tools/list_changed`` received during the whole check.
    notifications: int = 0
    rediscovered: int = 0
    #: Why the latest discovery stopped before the server said it was done.
    discovery_stopped: str | None = None
    connected: bool = False
    called: bool = False
    #: Class name of the exception that ended the check early, if any (never its message).
    error: str | None = None
    timed_out: bool = False
    elapsed_s: float = 0.0


class _Signals:
    """The client's ``message_handler``: counts ``notifications/tools/list_changed``."""

    def __init__(self) -> None:
        self.count = 0
        self.event = anyio.Event()

    async def __call__(self, message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1
            self.event.set()

    def rearm(self) -> None:
        self.event = anyio.Event()


def streamable_http(url: str, headers: dict[str, str], stack: AsyncExitStack) -> Any:
    """The streamable HTTP transport to ``url``, its HTTP client closed with ``stack``."""
    # The SDK's default timeouts (30 s; 300 s to read a stream); the run's bound caps them anyway.
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))
    stack.push_async_callback(http.aclose)
    return streamable_http_client(url, http_client=http)


def _transport(options: CheckOptions, stack: AsyncExitStack) -> Any:
    if options.url is not None:
        return streamable_http(options.url, options.headers, stack)
    command, *args = options.command
    # The server runs as it would from the operator's shell: same environment and directory.
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    return stdio_client(params, errlog=sys.stderr)


async def discover(client: Client, options: CheckOptions, facts: Facts) -> None:
    """Follow ``nextCursor`` to the end, stopping at a repeated cursor or at the page cap."""
    tools: list[types.Tool] = []
    requested: set[str | None] = set()
    cursor: str | None = None
    facts.pages = 0
    facts.discovery_stopped = None
    while True:
        requested.add(cursor)
        facts.pages += 1  # counted when requested: a failed page counts too
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
        if facts.pages >= options.max_pages:
            facts.discovery_stopped = "page_cap"
            break
        if cursor in requested:
            # Request the repeated cursor once more, so the spans show the loop itself.
            facts.pages += 1
            facts.discovery_stopped = "cursor_loop"
            await client.list_tools(cursor=cursor)
            break
    facts.tool_count = len(tools)
    if facts.discovery_stopped is None:
        facts.tool_names = tuple(tool.name for tool in tools)
        facts.tools = tuple(tools)
    # The check's client "installs" what it discovered: the processor then judges the catalog
    # on an ``mcp_health.install`` span even when no tool is called.
    record_installed_tools(client, tools)


async def _watch(
    client: Client, signals: _Signals, options: CheckOptions, facts: Facts, progress: Progress
) -> None:
    """Wait ``--watch`` seconds; re-discover after every ``list_changed`` that arrives."""
    deadline = time.monotonic() + options.watch_s
    async with anyio.create_task_group() as tg:
        if client.protocol_version >= "2026":
            # At 2026-07-28, list_changed only flows on a subscriptions/listen stream; its frames
            # reach the message handler like any notification.
            tg.start_soon(_listen, client)
        while (remaining := deadline - time.monotonic()) > 0:
            progress(f"watching for list_changed ({remaining:.0f} s left)")
            with anyio.move_on_after(remaining):
                await signals.event.wait()
            if not signals.event.is_set():
                break
            signals.rearm()
            progress("list_changed arrived: discovering again")
            await discover(client, options, facts)
            facts.rediscovered += 1
        tg.cancel_scope.cancel()


async def _listen(client: Client) -> None:
    try:
        async with client.listen(tools_list_changed=True) as subscription:
            async for _event in subscription:
                pass
    except Exception:  # noqa: BLE001 - a server that does not serve subscriptions: nothing to watch there
        return


async def call(client: Client, options: CheckOptions, deadline: float, facts: Facts) -> None:
    """Call ``--call`` with what is left of ``deadline``, then wait (bounded) for its receipt."""
    if options.call is None:  # only run when --call names a tool
        return
    facts.called = True
    # A little time is kept back for the receipt and for closing the session.
    timeout = max(deadline - time.monotonic() - CLOSE_RESERVE_S, 0.1)
    try:
        await client.call_tool(options.call, options.arguments, read_timeout_seconds=timeout)
    except Exception:  # noqa: BLE001, S110 - a failed call is the finding, judged on its span; not a check error
        pass
    finally:
        # The receipt ends the call span from a worker thread: wait for it (bounded).
        wait = min(RECEIPT_WAIT_S, max(deadline - time.monotonic(), 0.5))
        await anyio.to_thread.run_sync(flush_receipts, wait)


async def _session(options: CheckOptions, facts: Facts, progress: Progress) -> None:
    deadline = time.monotonic() + options.timeout_s
    signals = _Signals()
    try:
        await _steps(options, facts, signals, deadline, progress)
    finally:
        facts.notifications = signals.count


async def _steps(
    options: CheckOptions, facts: Facts, signals: _Signals, deadline: float, progress: Progress
) -> None:
    async with AsyncExitStack() as stack:
        transport = _transport(options, stack)
        client = Client(transport, mode=ERA_MODES[options.era], message_handler=signals, cache=None)
        progress("handshake")
        await stack.enter_async_context(client)
        facts.connected = True
        progress("discovering tools")
        await discover(client, options, facts)
        if options.watch_s > 0:
            await _watch(client, signals, options, facts, progress)
        elif signals.count:
            progress("list_changed arrived during discovery (not re-discovered: no --watch)")
        if options.call is not None:
            progress(f"calling {options.call}")
            # A signal that arrives from here on is judged on the call: it is not re-listed.
            await call(client, options, deadline, facts)


def leaf(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member exception groups (a task group's)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def run_bounded(timeout_s: float, steps: Callable[[], Awaitable[None]], facts: Facts) -> None:
    """Run ``steps`` in this thread's own event loop within ``timeout_s``; a timeout, an error's
    class name and the time taken go to ``facts``. Never raises for what the server does."""
    started = time.monotonic()
    try:

        async def bounded() -> None:
            with anyio.fail_after(timeout_s):
                await steps()

        anyio.run(bounded)
    except TimeoutError:
        facts.timed_out = True
    except Exception as exc:  # noqa: BLE001 - the spans say what failed; the message may carry secrets
        facts.error = type(leaf(exc)).__name__
    finally:
        facts.elapsed_s = time.monotonic() - started


def drive(options: CheckOptions, progress: Progress) -> Facts:
    """Run the check against the server; never raises for what the server does."""
    facts = Facts()
    if options.outcomes is not None:  # it replaces OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES's
        options.outcomes.install()
    try:
        run_bounded(options.timeout_s, lambda: _session(options, facts, progress), facts)
    finally:
        if options.outcomes is not None:
            options.outcomes.uninstall()
    return facts
