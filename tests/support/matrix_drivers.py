"""One agent, four ways to talk MCP: the client libraries the scenario table runs through.

Each driver opens a session to the reference server (the integration suite's two-page catalog,
always run by the project's own interpreter, ``MCP_HEALTH_SERVER_PYTHON``) over stdio or
streamable HTTP, and offers the same three moves: discover every page, call a tool (optionally
with a read timeout and a progress callback), and wait for ``list_changed``. What differs is the
library the application uses:

* ``session`` -- ``mcp.ClientSession`` over the SDK's transports (mcp 1.x and 2.x);
* ``client`` -- ``mcp.Client`` (mcp 2.x), in the ``initialize`` era that 1.x speaks;
* ``fastmcp`` -- FastMCP's ``Client`` (2.x/3.x on mcp 1.x, 4.x on mcp 2.x);
* ``langchain`` -- an agent's tools from ``langchain-mcp-adapters`` (``mcp >= 1.24, < 2``).

Only what a line's API spells differently is bridged here (timeouts as ``timedelta`` on 1.x,
``nextCursor``/``next_cursor``, the 1.x transport's third value); no instrumentation behaviour is.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio

from tests.support.served import served

#: The reference servers' directory: each server script there imports the modules beside it.
INTEGRATION = Path(__file__).resolve().parent.parent / "integration"
STDIO_SERVER = str(INTEGRATION / "stdio_server.py")
#: The reference server over streamable HTTP in its own process (``reference_http.py``).
REFERENCE_HTTP = INTEGRATION / "reference_http.py"
#: The server whose catalog changes on ``trigger_change`` (``changing_server.py``).
CHANGING_SERVER = INTEGRATION / "changing_server.py"
#: The interpreter that runs the reference servers (the project's ``.venv``: mcp 2.x).
SERVER_PYTHON = os.environ.get("MCP_HEALTH_SERVER_PYTHON", sys.executable)
MCP_MAJOR = int(version("mcp").split(".")[0])
LIST_CHANGED = "notifications/tools/list_changed"

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
Elicit = Callable[[], Awaitable[None]]


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def available() -> list[str]:
    """The drivers the installed packages support."""
    kinds = ["session"]
    if MCP_MAJOR >= 2:
        kinds.append("client")
    if _has("fastmcp"):
        kinds.append("fastmcp")
    if MCP_MAJOR == 1 and _has("langchain_mcp_adapters"):
        kinds.append("langchain")
    return kinds


def _timeout(seconds: float | None) -> Any:
    if seconds is None:
        return None
    return timedelta(seconds=seconds) if MCP_MAJOR == 1 else seconds


def _next_cursor(result: Any) -> str | None:
    name = "nextCursor" if MCP_MAJOR == 1 else "next_cursor"
    value = getattr(result, name)
    return None if value is None else str(value)


class Events:
    """What the server did to the application: ``list_changed`` arrivals and elicitations."""

    def __init__(self, on_elicit: Elicit | None = None) -> None:
        self.list_changed = anyio.Event()
        self.on_elicit = on_elicit

    async def message(self, message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == LIST_CHANGED:
            self.list_changed.set()

    async def elicit(self) -> None:
        if self.on_elicit is not None:
            await self.on_elicit()


class Driver:
    """The application's view of one open session."""

    kind = ""

    def __init__(self, events: Events) -> None:
        self.events = events

    async def list_all(self) -> None:
        raise NotImplementedError

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        read_timeout: float | None = None,
        progress: Progress | None = None,
    ) -> Any:
        raise NotImplementedError

    @property
    def session(self) -> Any:
        """The ``ClientSession`` underneath (for ``report_reconciliation``)."""
        raise NotImplementedError

    async def until_list_changed(self) -> None:
        """Call ``trigger_change`` once and wait (bounded) for its ``list_changed``: the servers
        tie the notification to the call, so it arrives ahead of the call's result."""
        await self.call("trigger_change", {})
        with anyio.fail_after(10):
            await self.events.list_changed.wait()


# ----------------------------------------------------------------------------------------------
# mcp.ClientSession (both lines) and mcp.Client (2.x)
# ----------------------------------------------------------------------------------------------
class SessionDriver(Driver):
    """Drives an ``mcp.ClientSession`` (either SDK line): pages ``tools/list`` by cursor and calls
    tools with the read timeout and progress callback given."""

    kind = "session"

    def __init__(self, events: Events, session: Any) -> None:
        super().__init__(events)
        self._session = session

    @property
    def session(self) -> Any:
        return self._session

    async def list_all(self) -> None:
        from mcp import types

        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self._session.list_tools(params=params)
            cursor = _next_cursor(page)
            if cursor is None:
                return

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        read_timeout: float | None = None,
        progress: Progress | None = None,
    ) -> Any:
        return await self._session.call_tool(
            name, arguments, read_timeout_seconds=_timeout(read_timeout), progress_callback=progress
        )


def _elicitation_result() -> Any:
    from mcp import types

    return types.ElicitResult(action="accept", content={"ok": True})


def _session_callbacks(events: Events) -> dict[str, Any]:
    async def elicitation(context: Any, params: Any) -> Any:
        await events.elicit()
        return _elicitation_result()

    return {"message_handler": events.message, "elicitation_callback": elicitation}


def _stdio_parameters() -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=SERVER_PYTHON, args=[STDIO_SERVER])


@asynccontextmanager
async def _streams(transport: str, url: str | None) -> AsyncIterator[tuple[Any, Any]]:
    if transport == "stdio":
        from mcp.client.stdio import stdio_client

        async with stdio_client(_stdio_parameters()) as (read, write):
            yield read, write
        return
    assert url is not None
    if MCP_MAJOR == 1:
        from mcp.client.streamable_http import streamablehttp_client

        async with streamablehttp_client(url) as (read, write, _session_id):
            yield read, write
        return
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write):
        yield read, write


@contextmanager
def http_server(*argv: str) -> Iterator[str]:
    """A server script (``argv`` after the interpreter) over streamable HTTP in its own process,
    run by :data:`SERVER_PYTHON`; yields the base URL it prints on its first line."""
    with served([SERVER_PYTHON, *argv]) as url:
        yield url


@asynccontextmanager
async def open_stdio(parameters: Any, events: Events) -> AsyncIterator[SessionDriver]:
    """A ``ClientSession`` over stdio to another server (``StdioServerParameters``)."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async with (
        stdio_client(parameters) as (read, write),
        ClientSession(read, write, **_session_callbacks(events)) as session,
    ):
        await session.initialize()
        yield SessionDriver(events, session)


@asynccontextmanager
async def _open_session(transport: str, url: str | None, events: Events) -> AsyncIterator[Driver]:
    from mcp import ClientSession

    async with (
        _streams(transport, url) as (read, write),
        ClientSession(read, write, **_session_callbacks(events)) as session,
    ):
        await session.initialize()
        yield SessionDriver(events, session)


class ClientDriver(SessionDriver):
    """Drives ``mcp.Client`` (2.x) through its own ``list_tools`` and ``call_tool``; ``session`` is
    the client's session."""

    kind = "client"

    def __init__(self, events: Events, client: Any) -> None:
        super().__init__(events, client.session)
        self._client = client

    async def list_all(self) -> None:
        cursor: str | None = None
        while True:
            page = await self._client.list_tools(cursor=cursor)
            cursor = _next_cursor(page)
            if cursor is None:
                return

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        read_timeout: float | None = None,
        progress: Progress | None = None,
    ) -> Any:
        return await self._client.call_tool(
            name, arguments, read_timeout_seconds=read_timeout, progress_callback=progress
        )


@asynccontextmanager
async def _open_client(transport: str, url: str | None, events: Events) -> AsyncIterator[Driver]:
    from mcp import Client
    from mcp.client.stdio import stdio_client

    # A transport (async context manager) is a target on every 2.x release.
    target = stdio_client(_stdio_parameters()) if transport == "stdio" else url
    async with Client(target, mode="legacy", **_session_callbacks(events)) as client:
        yield ClientDriver(events, client)


# ----------------------------------------------------------------------------------------------
# FastMCP's Client
# ----------------------------------------------------------------------------------------------
class FastMcpDriver(Driver):
    """Drives FastMCP's ``Client``: FastMCP pages the catalog itself where it can (2.14 and later;
    before, the driver pages through its session); tool errors come back as results
    (``raise_on_error=False``)."""

    kind = "fastmcp"

    def __init__(self, events: Events, client: Any) -> None:
        super().__init__(events)
        self._client = client

    @property
    def session(self) -> Any:
        return self._client.session

    async def list_all(self) -> None:
        if "cursor" in inspect.signature(self._client.list_tools_mcp).parameters:
            await self._client.list_tools()  # FastMCP pages through the catalog itself
            return
        # FastMCP before 2.14 reads the first page only (an agent on it gets
        # ``catalog_cursor_remaining``); the same scenario pages through its session.
        await SessionDriver(self.events, self._client.session).list_all()

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        read_timeout: float | None = None,
        progress: Progress | None = None,
    ) -> Any:
        return await self._client.call_tool(
            name,
            arguments,
            timeout=read_timeout,
            progress_handler=progress,
            raise_on_error=False,
        )


@asynccontextmanager
async def _open_fastmcp(transport: str, url: str | None, events: Events) -> AsyncIterator[Driver]:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

    async def elicitation(message: str, response_type: Any, params: Any, context: Any) -> Any:
        await events.elicit()
        return {"ok": True}  # FastMCP: returning the content accepts

    connection: Any
    if transport == "stdio":
        connection = StdioTransport(command=SERVER_PYTHON, args=[STDIO_SERVER])
    else:
        assert url is not None
        connection = StreamableHttpTransport(url)
    options: dict[str, Any] = {}
    if "mode" in inspect.signature(Client.__init__).parameters:  # FastMCP 4 (mcp 2.x)
        options["mode"] = "legacy"  # the initialize era, the one 1.x speaks
    client = Client(
        connection, message_handler=events.message, elicitation_handler=elicitation, **options
    )
    async with client:
        yield FastMcpDriver(events, client)


# ----------------------------------------------------------------------------------------------
# langchain-mcp-adapters: the agent's tools
# ----------------------------------------------------------------------------------------------
#: The adapter's tools take no per-call timeout; the session's read timeout (long enough for
#: every other step) is what makes the ``slow`` call time out.
LANGCHAIN_READ_TIMEOUT = 5.0


class LangchainDriver(Driver):
    """Drives langchain-mcp-adapters: discovery is ``load_mcp_tools``; a call invokes the loaded
    tool (or, before discovery or with a progress callback, the adapter's session)."""

    kind = "langchain"

    def __init__(self, events: Events, session: Any) -> None:
        super().__init__(events)
        self._session = session
        self._tools: dict[str, Any] = {}

    @property
    def session(self) -> Any:
        return self._session

    async def list_all(self) -> None:
        from langchain_mcp_adapters.tools import load_mcp_tools

        self._tools = {tool.name: tool for tool in await load_mcp_tools(self._session)}

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        read_timeout: float | None = None,
        progress: Progress | None = None,
    ) -> Any:
        tool = self._tools.get(name)
        if tool is None or progress is not None:
            # Before discovery the agent has no tool objects (and they take no progress
            # callback): the adapter's own session is what its tools call.
            return await self._session.call_tool(name, arguments, progress_callback=progress)
        return await tool.ainvoke(arguments)


@asynccontextmanager
async def _open_langchain(transport: str, url: str | None, events: Events) -> AsyncIterator[Driver]:
    from langchain_mcp_adapters.sessions import create_session

    session_kwargs = {
        **_session_callbacks(events),
        "read_timeout_seconds": timedelta(seconds=LANGCHAIN_READ_TIMEOUT),
    }
    connection: dict[str, Any]
    if transport == "stdio":
        connection = {
            "transport": "stdio",
            "command": SERVER_PYTHON,
            "args": [STDIO_SERVER],
            "session_kwargs": session_kwargs,
        }
    else:
        connection = {"transport": "streamable_http", "url": url, "session_kwargs": session_kwargs}
    async with create_session(connection) as session:  # type: ignore[arg-type]
        await session.initialize()
        yield LangchainDriver(events, session)


_OPENERS = {
    "session": _open_session,
    "client": _open_client,
    "fastmcp": _open_fastmcp,
    "langchain": _open_langchain,
}


@asynccontextmanager
async def connect(
    kind: str, transport: str, url: str | None, events: Events
) -> AsyncIterator[Driver]:
    """Open a session of the reference server with the ``kind`` library."""
    async with _OPENERS[kind](transport, url, events) as driver:
        yield driver


def assert_installed_once(pipeline: Any, *, tool_count: int | None = None) -> None:
    """The framework hook reported one install: converged, naming its server (so session-per-call
    sessions share it), and ``create_ticket`` was judged against that install's digest."""
    from otel_mcp_health import attributes as A

    [install] = pipeline.named(A.INSTALL_SPAN_NAME)
    attrs = install.attributes or {}
    assert attrs[A.CATALOG_VERDICT] == "converged"
    assert A.SERVER_TARGET_KEY in attrs
    if tool_count is not None:
        assert attrs[A.CATALOG_CLIENT_TOOL_COUNT] == tool_count
    call = pipeline.last("tools/call create_ticket").attributes or {}
    assert call[A.CATALOG_CLIENT_SOURCE] == "digest"
