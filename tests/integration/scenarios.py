"""Every scenario of issue 3 as plain functions, shared by the privacy and host-safety tests.

Each returns a list of outcome summaries -- what the application observed (result dumps,
exception types, codes and messages) -- so two runs can be compared for equality, and records
the objects the application received in ``received`` so identity checks can use them.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import mcp_types as types
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from tests.integration.mcp_health_servers import CANARY_ARG, CANARY_ENV, CANARY_TOKEN, build_server

Outcome = tuple[Any, ...]
Step = Callable[[], Awaitable[Any]]


class Recorder:
    """Runs steps, keeps what the application saw."""

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []
        self.received: list[Any] = []

    async def step(self, label: str, fn: Step) -> Any:
        try:
            result = await fn()
        except BaseException as exc:  # the application's view, including ExceptionGroups
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                raise
            self.received.append(exc)
            self.outcomes.append((label, "raised", _describe(exc)))
            return None
        self.received.append(result)
        dump = result.model_dump(mode="json") if hasattr(result, "model_dump") else repr(result)
        self.outcomes.append((label, "returned", type(result).__name__, dump))
        return result


def _describe(exc: BaseException) -> Any:
    if isinstance(exc, BaseExceptionGroup):
        return (type(exc).__name__, tuple(_describe(e) for e in exc.exceptions))
    return (type(exc).__name__, getattr(exc, "code", None), str(exc))


async def _session_steps(rec: Recorder, client: Client, prefix: str) -> None:
    first = await rec.step(f"{prefix} list 1", client.list_tools)
    cursor = first.next_cursor if first is not None else None
    await rec.step(f"{prefix} list 2", lambda: client.list_tools(cursor=cursor))
    await rec.step(
        f"{prefix} create",
        lambda: client.call_tool("create_ticket", {"title": CANARY_ARG, "priority": "p"}),
    )
    await rec.step(
        f"{prefix} missing arg", lambda: client.call_tool("create_ticket", {"title": CANARY_ARG})
    )
    await rec.step(f"{prefix} unknown tool", lambda: client.call_tool("nope", {"q": CANARY_ARG}))
    await rec.step(f"{prefix} isError", lambda: client.call_tool("fail", {"q": CANARY_ARG}))
    await rec.step(
        f"{prefix} -32602", lambda: client.call_tool("bad_args", {"ticketId": CANARY_ARG})
    )
    await rec.step(f"{prefix} -32601", client.session.list_prompts)
    await rec.step(f"{prefix} schema ok", lambda: client.call_tool("typed", {}))
    await rec.step(
        f"{prefix} schema violation", lambda: client.call_tool("typed_bad", {"q": CANARY_ARG})
    )
    await rec.step(f"{prefix} read only", lambda: client.call_tool("lookup", {"q": CANARY_ARG}))
    seen: list[Any] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    await rec.step(
        f"{prefix} progress",
        lambda: client.call_tool("progress", {}, progress_callback=on_progress),
    )
    with anyio.fail_after(5):
        while len(seen) < 3:
            await anyio.lowlevel.checkpoint()
    rec.outcomes.append((f"{prefix} progress seen", tuple(seen)))
    await rec.step(f"{prefix} elicitation", lambda: client.call_tool("ask", {}))
    await rec.step(
        f"{prefix} timeout",
        lambda: client.call_tool("slow", {"seconds": 5}, read_timeout_seconds=0.05),
    )


async def accept(context: Any, params: Any) -> types.ElicitResult:
    """The user says yes (an elicitation callback)."""
    return types.ElicitResult(action="accept", content={"ok": True})


async def list_all(client: Client) -> None:
    """Discover the two-page catalog of ``mcp_health_servers``: the first page, then the next."""
    first = await client.list_tools()
    await client.list_tools(cursor=first.next_cursor)


class Notifications:
    """A ``message_handler`` that records messages and signals the first ``list_changed``."""

    def __init__(self) -> None:
        self.received: list[Any] = []
        self.list_changed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        self.received.append(message)
        if isinstance(message, types.ToolListChangedNotification):
            self.list_changed.set()


async def until_list_changed(client: Client, notifications: Notifications) -> None:
    """Call ``trigger_change`` once and wait (bounded) for its ``list_changed`` to arrive.

    The servers tie the notification to the call (see ``announce_tools_changed``), so it arrives
    ahead of the call's result on every transport; one trigger is enough.
    """
    await client.call_tool("trigger_change", {})
    with anyio.fail_after(10):
        await notifications.list_changed.wait()


async def inprocess(rec: Recorder) -> None:
    async with Client(build_server(), elicitation_callback=accept) as client:
        await _session_steps(rec, client, "direct")
    notifications = Notifications()
    async with Client(
        build_server(), mode="legacy", message_handler=notifications, elicitation_callback=accept
    ) as client:
        await _session_steps(rec, client, "legacy")
        await until_list_changed(client, notifications)


async def http(rec: Recorder, base_url: str) -> None:
    headers = {"Authorization": f"Bearer {CANARY_TOKEN}"}
    notifications = Notifications()
    async with httpx2.AsyncClient(headers=headers) as http_client:
        async with (
            streamable_http_client(base_url + "/mcp", http_client=http_client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await rec.step("http raw initialize", session.initialize)
            await rec.step("http raw call", lambda: session.call_tool("fail", {"q": CANARY_ARG}))
        for route in ("/authn", "/authz", "/down"):
            await rec.step(f"http {route}", partial(_raw_handshake, http_client, base_url + route))
    async with Client(base_url + "/mcp", elicitation_callback=accept) as client:
        await _session_steps(rec, client, "http discover")
    async with Client(
        base_url + "/mcp", mode="legacy", message_handler=notifications, elicitation_callback=accept
    ) as client:
        await _session_steps(rec, client, "http initialize")
        await until_list_changed(client, notifications)
    await rec.step("dns", lambda: _client_handshake("http://mcp-health-test.invalid/mcp"))


async def _raw_handshake(http_client: httpx2.AsyncClient, url: str) -> Any:
    with anyio.fail_after(15):
        async with (
            streamable_http_client(url, http_client=http_client) as (read, write),
            ClientSession(read, write) as session,
        ):
            return await session.initialize()


async def _client_handshake(url: str) -> Any:
    with anyio.fail_after(15):
        async with Client(url, mode="legacy") as client:
            return client.protocol_version


def stdio_params(script: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=[script], env={"MCP_HEALTH_TEST_SECRET": CANARY_ENV}
    )


async def stdio(rec: Recorder, script: str) -> None:
    with anyio.fail_after(30):
        async with Client(
            stdio_params(script), mode="legacy", elicitation_callback=accept
        ) as client:
            await _session_steps(rec, client, "stdio")
            await rec.step("stdio crash", lambda: client.call_tool("crash", {"q": CANARY_ARG}))
