"""Freshness that tells its evidence, at the 2026-07-28 era (docs/model.md#scope).

At that era a server announces a change only on a ``subscriptions/listen`` stream that the
client opened; no agent framework opens one. A session that advertised ``tools.listChanged`` but
listens on no stream hears nothing, so its catalog is held to the maximum age (configured short
here) like a server that cannot signal: past it, ``stale`` / ``refresh_overdue``. With a listen
stream open (acknowledged for tool changes) the same old catalog stays ``converged``, and when
that stream ends the catalog is held to the maximum age again. Real ``mcp.Client`` (``auto``:
``server/discover``), real servers in-process and over streamable HTTP, real span processor.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from tests.integration import scenarios
from tests.integration.mcp_health_servers import on_call_tool, on_list_tools, serve_http
from tests.support.processor_helpers import Pipeline, instrumenting

from otel_mcp_health import attributes as A
from otel_mcp_health.environment_variables import (
    OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S as MAX_AGE,
)

pytestmark = pytest.mark.anyio

#: The configured maximum age, and a wait just past it.
MAX_AGE_S = 1.0
PAST_MAX_AGE_S = MAX_AGE_S + 0.3


@pytest.fixture
def verdicts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Pipeline]:
    """The instrumented client judged by a processor configured with a 1 s maximum age."""
    monkeypatch.setenv(MAX_AGE, str(MAX_AGE_S))
    pipeline = Pipeline.build()
    try:
        with instrumenting(pipeline):
            yield pipeline
    finally:
        pipeline.provider.shutdown()


def listening_server() -> Server[Any]:
    """The reference catalog from a server that serves ``subscriptions/listen`` (so it
    advertises ``tools.listChanged`` at the 2026-07-28 era)."""
    return Server(
        "health-test-server",
        version="1.2.3",
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_subscriptions_listen=ListenHandler(InMemorySubscriptionBus()),
    )


@asynccontextmanager
async def modern_client(where: str) -> AsyncIterator[Client]:
    """A 2026-07-28 session (``server/discover``) in-process or over streamable HTTP."""
    if where == "inprocess":
        async with Client(listening_server(), mode="auto") as client:
            yield client
        return
    async with (
        serve_http(listening_server()) as url,
        Client(url + "/mcp", mode="auto") as client,
    ):
        yield client


def catalog(span: Any) -> tuple[Any, ...]:
    attrs = span.attributes or {}
    return (attrs.get(A.VERDICT), attrs.get(A.CATALOG_VERDICT), attrs.get(A.CATALOG_REASON))


CONVERGED = ("unverified", "converged", "ok")
OVERDUE = ("stale_catalog", "stale", "refresh_overdue")


@pytest.mark.parametrize("where", ["inprocess", "http"])
async def test_a_session_without_a_listen_stream_is_held_to_the_maximum_age(
    verdicts: Pipeline, where: str
) -> None:
    with anyio.fail_after(30):
        async with modern_client(where) as client:
            assert client.server_capabilities.tools.list_changed is True
            await scenarios.list_all(client)
            await client.call_tool("lookup", {})
            await anyio.sleep(PAST_MAX_AGE_S)
            await client.call_tool("lookup", {})
    fresh, overdue = verdicts.named("tools/call lookup")
    assert catalog(fresh) == CONVERGED
    assert catalog(overdue) == OVERDUE
    assert (overdue.attributes or {})[A.REASON] == "catalog_refresh_overdue"
    [handshake] = [s.attributes or {} for s in verdicts.named("server/discover")]
    assert handshake[A.SESSION_NOTIFICATION_CHANNEL] == A.CHANNEL_LISTEN_STREAM
    assert verdicts.named(A.CHANNEL_SPAN_NAME) == []


@pytest.mark.parametrize("where", ["inprocess", "http"])
async def test_an_open_listen_stream_keeps_the_catalog_fresh_until_it_ends(
    verdicts: Pipeline, where: str
) -> None:
    with anyio.fail_after(30):
        async with modern_client(where) as client:
            async with client.listen(tools_list_changed=True):
                await scenarios.list_all(client)
                await anyio.sleep(PAST_MAX_AGE_S)
                await client.call_tool("lookup", {})
            await client.call_tool("lookup", {})
    listening, closed = verdicts.named("tools/call lookup")
    assert catalog(listening) == CONVERGED
    assert catalog(closed) == OVERDUE
    marks = [(s.attributes or {}) for s in verdicts.named(A.CHANNEL_SPAN_NAME)]
    assert [(m[A.SESSION_NOTIFICATION_CHANNEL], m[A.CHANNEL_OPEN]) for m in marks] == [
        (A.CHANNEL_LISTEN_STREAM, True),
        (A.CHANNEL_LISTEN_STREAM, False),
    ]
    key = (verdicts.last("server/discover").attributes or {})[A.SESSION_KEY]
    assert {m[A.SESSION_KEY] for m in marks} == {key}
