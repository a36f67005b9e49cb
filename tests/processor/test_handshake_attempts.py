"""One handshake attempt, one judgement (docs/model.md#handshake), with the real mcp 2.x client.

``mcp.Client`` in ``mode="auto"`` (the default, and what openai-agents, pydantic-ai and strands
run) probes ``server/discover`` and falls back to ``initialize`` when the probe is answered with
an error. Before, a server that speaks only ``initialize`` left a verdict-less ``server/discover``
span on every connect, and a 401 gave two ``needs_auth`` spans and two incidents for one
connection attempt. Now the probe is marked superseded and the attempt is judged on the fallback.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
import uvicorn
from mcp import Client
from opentelemetry.sdk.trace import ReadableSpan
from tests.integration.mcp_health_servers import build_server, serve_http
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio


class _InitializeOnly:
    """An MCP app behind a front that answers ``server/discover`` as a 1.x-era server does
    (JSON-RPC ``-32601``, method not found); every other request reaches the app unchanged."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        request = json.loads(body) if body else None
        if isinstance(request, dict) and request.get("method") == "server/discover":
            error = {"code": -32601, "message": "Method not found"}
            payload = json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "error": error})
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": payload.encode()})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


@asynccontextmanager
async def _initialize_only_server() -> AsyncIterator[str]:
    app = _InitializeOnly(build_server().streamable_http_app(host="127.0.0.1"))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:  # noqa: ASYNC110  # uvicorn exposes a flag, no event
                await anyio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.should_exit = True


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def test_a_probe_answered_by_a_legacy_server_is_superseded(instrumented: Pipeline) -> None:
    with anyio.fail_after(30):
        async with _initialize_only_server() as url, Client(url) as client:
            await client.list_tools()
    probe = _attrs(instrumented.last("server/discover"))
    assert probe[A.RPC_RESPONSE_STATUS_CODE] == "-32601"
    assert probe[A.SESSION_SUPERSEDED] is True
    assert A.VERDICT not in probe
    handshake = _attrs(instrumented.last("initialize"))
    assert handshake[A.SESSION_KEY] == probe[A.SESSION_KEY]
    assert A.SESSION_SUPERSEDED not in handshake
    assert A.VERDICT not in handshake  # a successful handshake gets none
    # the probe span keeps its own timing: it ended before the fallback started
    discover, initialize = instrumented.last("server/discover"), instrumented.last("initialize")
    assert discover.end_time is not None
    assert initialize.start_time is not None
    assert discover.end_time <= initialize.start_time
    assert instrumented.counts(A.METRIC_INCIDENTS, A.VERDICT) == {}


async def test_a_401_connection_attempt_is_one_needs_auth(instrumented: Pipeline) -> None:
    async with serve_http(build_server()) as base:
        with anyio.fail_after(30), pytest.raises(Exception):  # noqa: B017, PT011  # the SDK's own
            async with Client(base + "/authn"):
                pass
    probe = _attrs(instrumented.last("server/discover"))
    assert probe[A.HTTP_RESPONSE_STATUS_CODE] == 401
    assert probe[A.SESSION_SUPERSEDED] is True
    assert A.VERDICT not in probe
    assert _judged(instrumented) == [("initialize", "needs_auth")]
    assert instrumented.counts(A.METRIC_INCIDENTS, A.VERDICT) == {"needs_auth": 1}


def _judged(pipeline: Pipeline) -> list[tuple[str, Any]]:
    return [(s.name, _attrs(s)[A.VERDICT]) for s in pipeline.spans() if A.VERDICT in _attrs(s)]


async def test_a_503_probe_is_superseded_too(instrumented: Pipeline) -> None:
    async with serve_http(build_server()) as base:
        with anyio.fail_after(30), pytest.raises(Exception):  # noqa: B017, PT011  # the SDK's own
            async with Client(base + "/down"):
                pass
    assert _attrs(instrumented.last("server/discover"))[A.SESSION_SUPERSEDED] is True
    assert _judged(instrumented) == [("initialize", "transport_error")]


async def test_a_probe_that_fails_below_the_protocol_keeps_its_verdict(
    instrumented: Pipeline,
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    with anyio.fail_after(30), pytest.raises(Exception):  # noqa: B017, PT011  # the SDK's own
        async with Client(f"http://127.0.0.1:{port}/mcp"):
            pass
    assert _judged(instrumented) == [("server/discover", "transport_error")]
    assert A.SESSION_SUPERSEDED not in _attrs(instrumented.last("server/discover"))
    assert instrumented.named("initialize") == []  # the client does not fall back
