"""The SSE transport is a transport like the others (docs/model.md#scope), on every SDK line.

``mcp.client.sse.sse_client`` (openai-agents ``MCPServerSse``, LangChain ``"transport": "sse"``)
against a real SSE server on 127.0.0.1 (``gateway_http.py``): its sessions carry
``network.transport = tcp``, ``server.address`` and ``server.port``, the authorization layer is
judged from the HTTP answers to its POSTs, and a server that refuses the connecting GET (401,
403) before any session or handshake exists is judged on an ``mcp_health.connect`` span, as a
refused ``initialize`` is on streamable HTTP. Before, none of this was recognised: no transport,
no address, authorization ``not_applicable``, and a refused connect exported no span at all.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest
from tests.support.matrix_drivers import INTEGRATION, Driver, Events, SessionDriver, http_server
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio

SECRET = "ssekey-71c4d09e2b"


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    """``gateway_http.py``: an SSE server (and refusing SSE endpoints) on 127.0.0.1."""
    with http_server(str(INTEGRATION / "gateway_http.py"), SECRET) as url:
        yield url


@asynccontextmanager
async def sse_session(url: str) -> AsyncIterator[Driver]:
    from mcp import ClientSession
    from mcp.client.sse import sse_client

    async with sse_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield SessionDriver(Events(), session)


def ours(pipeline: Pipeline, name: str) -> list[dict[str, Any]]:
    """The exported attributes of our spans named ``name`` (not the SDK's own)."""
    return [
        dict(s.attributes or {})
        for s in pipeline.named(name)
        if A.SESSION_KEY in (s.attributes or {}) and s.name == name
    ]


def _host_port(gateway: str) -> tuple[str, int]:
    host, port = gateway.removeprefix("http://").split(":")
    return host, int(port)


async def test_an_sse_session_is_a_network_session(
    verdicts: Pipeline, gateway: str, create_ticket_verified: None
) -> None:
    with anyio.fail_after(60):
        async with sse_session(f"{gateway}/sse?api_key={SECRET}") as agent:
            await agent.list_all()
            await agent.call("create_ticket", {"title": "t", "priority": "p"})
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)  # the call's span has ended
    host, port = _host_port(gateway)
    (call,) = ours(verdicts, "tools/call create_ticket")
    handshake = ours(verdicts, "initialize")[-1]
    for attrs in (call, handshake):
        assert attrs[A.NETWORK_TRANSPORT] == "tcp", attrs
        assert attrs[A.SERVER_ADDRESS] == host
        assert attrs[A.SERVER_PORT] == port
        assert A.SERVER_TARGET_KEY in attrs
    # the POST that carried the call was answered 202: the authorization layer passed
    assert call[A.HTTP_RESPONSE_STATUS_CODE] == 202
    assert call[A.layer_attribute("authorization")] == "passed"
    assert call[A.VERDICT] == "healthy", call
    exported = repr([(s.name, dict(s.attributes or {})) for s in verdicts.spans()])
    assert SECRET not in exported


@pytest.mark.parametrize(
    "refusal",
    [
        ("/sse-authn", 401, "invalid_token", "refresh_token_once"),
        ("/sse-authz", 403, "insufficient_scope", "request_scope"),
    ],
    ids=["401", "403"],
)
async def test_a_refused_sse_connect_is_judged_needs_auth(
    verdicts: Pipeline, gateway: str, refusal: tuple[str, int, str, str]
) -> None:
    path, status, reason, action = refusal
    with anyio.fail_after(30), pytest.raises(Exception):  # noqa: B017, PT011 - the SDK's own
        async with sse_session(gateway + path):
            pass
    host, port = _host_port(gateway)
    (connect,) = ours(verdicts, A.CONNECT_SPAN_NAME)
    assert connect[A.VERDICT] == "needs_auth", connect
    assert connect[A.REASON] == reason
    assert connect[A.NEXT_ACTION] == action
    assert connect[A.CALL_FIRST_FAILED_LAYER] == "authorization"
    assert connect[A.layer_attribute("transport")] == "passed"
    assert connect[A.layer_attribute("authorization")] == "failed"
    assert connect[A.HTTP_RESPONSE_STATUS_CODE] == status
    assert connect[A.NETWORK_TRANSPORT] == "tcp"
    assert (connect[A.SERVER_ADDRESS], connect[A.SERVER_PORT]) == (host, port)
    assert connect[A.INCIDENT_ATTEMPT] == 1
    opened = verdicts.metric_points(A.METRIC_INCIDENTS)
    assert [p["attributes"][A.VERDICT] for p in opened] == ["needs_auth"]
    assert opened[0]["attributes"][A.SERVER_ADDRESS] == host


@pytest.mark.parametrize(
    ("path", "status"),
    [("/nothing-here", 404), ("/github/mcp", 400)],
    ids=["404-no-such-endpoint", "400-streamable-http-endpoint"],
)
async def test_an_sse_connect_refused_with_an_error_status_is_a_transport_error(
    verdicts: Pipeline, gateway: str, path: str, status: int
) -> None:
    """A mistyped SSE URL, or a streamable HTTP endpoint configured as SSE: the connecting GET
    is answered 404 or 400 and the SDK raises. Before, the connect span carried no verdict."""
    with anyio.fail_after(30), pytest.raises(Exception):  # noqa: B017, PT011 - the SDK's own
        async with sse_session(gateway + path):
            pass
    (connect,) = ours(verdicts, A.CONNECT_SPAN_NAME)
    assert connect.get(A.VERDICT) == "transport_error", connect
    assert connect[A.REASON] == f"http_{status}"
    assert connect[A.CALL_FIRST_FAILED_LAYER] == "transport"
    assert connect[A.HTTP_RESPONSE_STATUS_CODE] == status
    assert connect[A.INCIDENT_ATTEMPT] == 1


class _LoginPage(BaseHTTPRequestHandler):
    """What an SSO proxy in front of an SSE server answers: 200 with an HTML login page, or
    (``/redirect``) a 302 to a login page on another origin, which the SDK does not follow."""

    def do_GET(self) -> None:
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("location", "http://127.0.0.2:1/login")
            self.send_header("content-length", "0")
            self.end_headers()
            return
        body = b"<html>sign in</html>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("path", "reasons"),
    [("/sse", {"http_200"}), ("/redirect", {"http_302", "connection_refused"})],
)
async def test_an_sse_connect_answered_with_a_page_is_a_transport_error(
    verdicts: Pipeline, path: str, reasons: set[str]
) -> None:
    """A 200 that is no event stream (sse_client raises SSEError), or a redirect to another
    origin (not followed: HTTPStatusError; SDKs older than the same-origin rule follow it, to a
    closed port here), and no session follows. Before, no span at all: the failed connect was
    invisible."""
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), _LoginPage)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        with anyio.fail_after(30), pytest.raises(Exception):  # noqa: B017, PT011 - the SDK's own
            async with sse_session(f"http://127.0.0.1:{proxy.server_address[1]}{path}"):
                pass
    finally:
        proxy.shutdown()
        proxy.server_close()
    (connect,) = ours(verdicts, A.CONNECT_SPAN_NAME)
    assert connect.get(A.VERDICT) == "transport_error", connect
    assert connect[A.REASON] in reasons
    assert connect[A.CALL_FIRST_FAILED_LAYER] == "transport"


async def test_a_followed_sse_redirect_is_one_network_session(
    verdicts: Pipeline, gateway: str
) -> None:
    """``/sse/`` is redirected (307) to ``/sse`` on the same origin, which the SDK follows: one
    session of the server, and no refused connect."""
    with anyio.fail_after(60):
        async with sse_session(f"{gateway}/sse/") as agent:
            await agent.call("lookup", {})
    (call,) = ours(verdicts, "tools/call lookup")
    assert call[A.NETWORK_TRANSPORT] == "tcp", call
    assert A.SERVER_TARGET_KEY in call
    assert not ours(verdicts, A.CONNECT_SPAN_NAME)


async def test_many_sse_sessions_connecting_at_once_are_each_a_network_session(
    verdicts: Pipeline, gateway: str
) -> None:
    """A service that opens an SSE session per request, 64 at once: every session is recognised
    (before, 15 to 20 of them had no transport, address or target key: their connecting GETs
    were pushed out of a queue of 16 before their sessions registered)."""
    sessions = 64

    async def one() -> None:
        async with sse_session(f"{gateway}/sse") as agent:
            await agent.call("lookup", {})

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for _ in range(sessions):
                group.start_soon(one)
    found = ours(verdicts, "tools/call lookup")
    assert len(found) == sessions
    host, port = _host_port(gateway)
    unrecognised = [
        c
        for c in found
        if (c.get(A.NETWORK_TRANSPORT), c.get(A.SERVER_ADDRESS), c.get(A.SERVER_PORT))
        != ("tcp", host, port)
        or A.SERVER_TARGET_KEY not in c
    ]
    assert not unrecognised, f"{len(unrecognised)} of {sessions}"


async def _run_as_the_application(gateway: str) -> tuple[str, type[BaseException]]:
    """What the application sees: a call's text over SSE, and a refused connect's exception."""
    with anyio.fail_after(60):
        async with sse_session(f"{gateway}/sse") as agent:
            await agent.list_all()
            result = await agent.call("lookup", {})
        try:
            async with sse_session(f"{gateway}/sse-authn"):
                pass
        except Exception as exc:  # the SDK's own failure is the scenario
            return result.content[0].text, type(exc)
    raise AssertionError("the refused connect did not raise")


async def test_broken_sse_hooks_change_nothing_for_the_application(
    verdicts: Pipeline, gateway: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Host first: with every SSE hook raising, the application sees the same results and the
    same exception as with the instrumentation switched off."""
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    from otel_mcp_health.instrumentation import _sse

    with suppress_instrumentation():
        baseline = await _run_as_the_application(gateway)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("forced failure")

    for name in ("sse_exchange", "sse_answered", "sse_failed"):
        monkeypatch.setattr(_sse, name, broken)
    assert await _run_as_the_application(gateway) == baseline
    assert not ours(verdicts, A.CONNECT_SPAN_NAME)
