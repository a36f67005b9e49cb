"""A session's transport identity is its own: stdio, in-process and HTTP in any order, one process.

mcp 1.x's streamable HTTP transport hands the session plain anyio memory streams, as stdio does.
Identity once came from a mark that ``stdio_client`` left in the caller's context, so after one
stdio session every later HTTP session of that task was exported as ``network.transport = pipe``
without ``server.address``, and a 401 on it lost its ``needs_auth``. Now a session is a pipe only
when its own write stream is the one ``stdio_client`` yielded. Every test runs its sessions in
one task (one context), in each order, with a 401 among them; one keeps them open together, as
``MultiServerMCPClient`` with a stdio and an HTTP server does.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind
from tests.support.matrix_drivers import MCP_MAJOR, Driver, Events, SessionDriver, connect
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio

KINDS = ("stdio", "in-process", "http")


@asynccontextmanager
async def _in_process() -> AsyncIterator[Driver]:
    """An in-process session on the installed line (memory streams on 1.x, direct on 2.x)."""
    if MCP_MAJOR == 1:
        from mcp.server.fastmcp import FastMCP
        from mcp.shared.memory import create_connected_server_and_client_session

        app = FastMCP("in-process")

        @app.tool()
        def lookup(key: str) -> str:
            return "found"

        async with create_connected_server_and_client_session(app) as session:
            yield SessionDriver(Events(), session)
        return
    from mcp import Client
    from tests.integration.mcp_health_servers import build_server

    async with Client(build_server()) as client:
        yield SessionDriver(Events(), client.session)


def _open(kind: str, base: str) -> Any:
    if kind == "in-process":
        return _in_process()
    return connect("session", kind, base + "/mcp", Events())


async def _unauthorized(base: str) -> None:
    """A handshake answered 401 ``invalid_token``; the client's exception is the SDK's own."""
    try:
        async with connect("session", "http", base + "/authn", Events()):
            pass
    except Exception:  # the SDK's own failure (an exception group on 1.x) is the scenario
        pass


def _sessions(pipeline: Pipeline) -> list[list[ReadableSpan]]:
    """The CLIENT spans of each session, sessions in the order their first span started."""
    by_key: dict[Any, list[ReadableSpan]] = {}
    spans = sorted(pipeline.spans(), key=lambda s: s.start_time or 0)
    for span in spans:
        if span.kind is SpanKind.CLIENT:
            by_key.setdefault((span.attributes or {}).get(A.SESSION_KEY), []).append(span)
    return list(by_key.values())


def _identity(spans: list[ReadableSpan]) -> set[tuple[Any, Any, Any]]:
    return {
        (
            (s.attributes or {}).get(A.NETWORK_TRANSPORT),
            (s.attributes or {}).get(A.SERVER_ADDRESS),
            (s.attributes or {}).get(A.SERVER_PORT),
        )
        for s in spans
    }


def _expected(kind: str, base: str) -> set[tuple[Any, Any, Any]]:
    url = urlsplit(base)
    return {
        "stdio": {("pipe", None, None)},
        "in-process": {(None, None, None)},
        "http": {("tcp", url.hostname, url.port)},
    }[kind]


def _assert_unauthorized(spans: list[ReadableSpan], base: str) -> None:
    assert _identity(spans) == _expected("http", base)
    judged = [(s.attributes or {}).get(A.VERDICT) for s in spans if s.name == "initialize"]
    assert judged == ["needs_auth"]


async def _use(agent: Driver) -> None:
    await agent.list_all()


@pytest.mark.parametrize("order", list(itertools.permutations(KINDS)), ids="-".join)
async def test_every_order_keeps_each_session_identity(
    order: tuple[str, ...], verdicts: Pipeline, reference_url: str
) -> None:
    with anyio.fail_after(60):
        for kind in order:
            async with _open(kind, reference_url) as agent:
                await _use(agent)
        await _unauthorized(reference_url)
    sessions = _sessions(verdicts)
    assert len(sessions) == len(order) + 1
    for kind, spans in zip(order, sessions, strict=False):
        assert _identity(spans) == _expected(kind, reference_url), kind
    _assert_unauthorized(sessions[-1], reference_url)


async def test_sessions_open_together_keep_their_identities(
    verdicts: Pipeline, reference_url: str
) -> None:
    with anyio.fail_after(60):
        async with AsyncExitStack() as stack:
            agents = [await stack.enter_async_context(_open(k, reference_url)) for k in KINDS]
            await _unauthorized(reference_url)  # opened while a stdio session is live
            for agent in reversed(agents):
                await _use(agent)
    sessions = _sessions(verdicts)
    assert len(sessions) == len(KINDS) + 1
    for kind, spans in zip(KINDS, sessions, strict=False):
        assert _identity(spans) == _expected(kind, reference_url), kind
    _assert_unauthorized(sessions[-1], reference_url)
