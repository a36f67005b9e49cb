"""Streamable HTTP through the real SDK against a real uvicorn server on 127.0.0.1, both eras,
and the failures the SDK collapses or hides: DNS, refused connection, 503, 401, 403."""

from __future__ import annotations

import socket

import anyio
import httpx2
import pytest
from mcp import Client, ClientSession, MCPError
from mcp.client.auth import AuthorizationCodeResult
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import AnyUrl
from tests.integration import scenarios
from tests.integration.mcp_health_servers import CANARY_TOKEN
from tests.integration.mcp_health_support import Captured, attribute_types

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio


@pytest.fixture
def base_url(http_base_url: str) -> str:
    return http_base_url


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # closed again: nothing listens there


@pytest.mark.parametrize(
    ("mode", "era", "version"),
    [("auto", "server/discover", "2026-07-28"), ("legacy", "initialize", "2025-11-25")],
    ids=["discover", "initialize"],
)
async def test_http_session(
    captured: Captured, base_url: str, mode: str, era: str, version: str
) -> None:
    async with Client(base_url + "/mcp", mode=mode) as client:
        first = await client.list_tools()
        await client.list_tools(cursor=first.next_cursor)
        result = await client.call_tool("fail", {})
        with pytest.raises(MCPError):
            await client.call_tool("bad_args", {"x": 1})
    assert result.is_error is True
    port = int(base_url.rsplit(":", 1)[1])
    handshake = captured.one(era)
    hattrs = handshake.attributes or {}
    assert hattrs[A.NETWORK_TRANSPORT] == "tcp"
    assert hattrs[A.NETWORK_PROTOCOL_NAME] == "http"
    assert hattrs[A.SERVER_ADDRESS] == "127.0.0.1"
    assert hattrs[A.SERVER_PORT] == port
    assert hattrs[A.HTTP_RESPONSE_STATUS_CODE] == 200
    assert hattrs[A.MCP_PROTOCOL_VERSION] == version
    call = captured.one("tools/call fail")
    assert attribute_types(call) == {
        A.MCP_METHOD_NAME: str,
        A.SESSION_KEY: str,
        A.MCP_PROTOCOL_VERSION: str,
        A.NETWORK_TRANSPORT: str,
        A.NETWORK_PROTOCOL_NAME: str,
        A.SERVER_ADDRESS: str,
        A.SERVER_PORT: int,
        A.GEN_AI_TOOL_NAME: str,
        A.GEN_AI_OPERATION_NAME: str,
        A.CALL_IDLE_WINDOW_S: float,
        A.CALL_CONTRACT: str,
        A.JSONRPC_REQUEST_ID: str,
        A.HTTP_RESPONSE_STATUS_CODE: int,
        A.CALL_IS_ERROR: bool,
        A.TRANSPORT_OUTCOME: str,
        A.TRANSPORT_REQUEST_WRITTEN: bool,
        A.ERROR_TYPE: str,
        **dict.fromkeys((A.SERVER_NAME, A.SERVER_TARGET_KEY), str),
        **({A.MCP_SESSION_ID: str} if era == "initialize" else {}),
    }
    if era == "initialize":  # stateful legacy sessions get a server-issued id
        assert (call.attributes or {})[A.MCP_SESSION_ID] == (hattrs.get(A.MCP_SESSION_ID))
    bad = captured.one("tools/call bad_args").attributes or {}
    assert bad[A.RPC_RESPONSE_STATUS_CODE] == "-32602"
    assert bad[A.TRANSPORT_OUTCOME] == "ok"
    assert captured.sdk_client_spans() == []


async def test_http_progress_and_list_changed(captured: Captured, base_url: str) -> None:
    notifications = scenarios.Notifications()
    reported: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append(progress)

    async with Client(base_url + "/mcp", mode="legacy", message_handler=notifications) as client:
        await client.call_tool("progress", {}, progress_callback=on_progress)
        await scenarios.until_list_changed(client, notifications)
    span = captured.one("tools/call progress")
    values = [
        (e.attributes or {})[A.PROGRESS_VALUE] for e in span.events if e.name == A.PROGRESS_EVENT
    ]
    assert values == [1.0, 2.0, 3.0] == reported
    notes = captured.named(A.NOTIFICATION_SPAN_METHOD)
    assert notes
    attrs = notes[0].attributes or {}
    assert attrs[A.NETWORK_TRANSPORT] == "tcp"
    assert isinstance(attrs[A.MCP_SESSION_ID], str)
    assert attrs[A.SESSION_KEY] == (span.attributes or {})[A.SESSION_KEY]


async def _fail_connect(url: str, mode: str = "legacy") -> BaseException:
    with anyio.fail_after(15):
        try:
            async with Client(url, mode=mode):
                pass
        except BaseException as exc:  # the SDK raises ExceptionGroups here
            return exc
    raise AssertionError("connected")


async def _raw_handshake_fails(http: httpx2.AsyncClient, url: str) -> None:
    with anyio.fail_after(15), pytest.raises((MCPError, BaseExceptionGroup)):
        async with (
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()


async def test_http_503(captured: Captured, base_url: str) -> None:
    await _fail_connect(base_url + "/down")
    span = captured.one("initialize")
    attrs = span.attributes or {}
    assert attrs[A.HTTP_RESPONSE_STATUS_CODE] == 503
    assert attrs[A.TRANSPORT_OUTCOME] == "http_error"
    assert attrs[A.ERROR_TYPE] == "503"
    assert attrs[A.TRANSPORT_REQUEST_WRITTEN] is True
    assert A.RPC_RESPONSE_STATUS_CODE not in attrs  # the SDK's made-up -32603 is not evidence
    assert span.status.status_code is StatusCode.ERROR


async def test_http_503_discover_falls_back(captured: Captured, base_url: str) -> None:
    await _fail_connect(base_url + "/down", mode="auto")
    for name in ("server/discover", "initialize"):
        attrs = captured.one(name).attributes or {}
        assert attrs[A.HTTP_RESPONSE_STATUS_CODE] == 503
        assert attrs[A.ERROR_TYPE] == "503"
    # same session key on both handshake attempts
    assert len({(s.attributes or {})[A.SESSION_KEY] for s in captured.client_spans()}) == 1


async def test_http_401_invalid_token(captured: Captured, base_url: str) -> None:
    headers = {"Authorization": f"Bearer {CANARY_TOKEN}"}
    async with httpx2.AsyncClient(headers=headers) as http:
        await _raw_handshake_fails(http, base_url + "/authn")
    attrs = captured.one("initialize").attributes or {}
    assert attrs[A.HTTP_RESPONSE_STATUS_CODE] == 401
    assert attrs[A.AUTH_ERROR] == "invalid_token"
    assert A.AUTH_REQUIRED_SCOPES not in attrs
    assert attrs[A.TRANSPORT_OUTCOME] == "ok"
    assert attrs[A.ERROR_TYPE] == "401"


async def test_http_403_insufficient_scope(captured: Captured, base_url: str) -> None:
    await _fail_connect(base_url + "/authz")
    span = captured.one("initialize")
    attrs = span.attributes or {}
    assert attrs[A.HTTP_RESPONSE_STATUS_CODE] == 403
    assert attrs[A.AUTH_ERROR] == "insufficient_scope"
    assert attrs[A.AUTH_REQUIRED_SCOPES] == ("tickets:write", "admin")
    assert attribute_types(span)[A.AUTH_REQUIRED_SCOPES] is tuple


async def test_dns_failure(captured: Captured) -> None:
    await _fail_connect("http://mcp-health-test.invalid/mcp")
    attrs = captured.one("initialize").attributes or {}
    assert attrs[A.TRANSPORT_OUTCOME] == "dns_failure"
    assert attrs[A.TRANSPORT_REQUEST_WRITTEN] is False
    assert attrs[A.ERROR_TYPE] == "dns_failure"
    assert attrs[A.SERVER_ADDRESS] == "mcp-health-test.invalid"
    assert attrs[A.SERVER_PORT] == 80


async def test_connection_refused(captured: Captured) -> None:
    port = _closed_port()
    await _fail_connect(f"http://127.0.0.1:{port}/mcp")
    span = captured.one("initialize")
    attrs = span.attributes or {}
    assert attrs[A.TRANSPORT_OUTCOME] == "connection_refused"
    assert attrs[A.TRANSPORT_REQUEST_WRITTEN] is False
    assert attrs[A.SERVER_PORT] == port
    assert span.status.status_code is StatusCode.ERROR
    assert span.kind is SpanKind.CLIENT


class _MemoryTokens:
    """An empty token store (``mcp.client.auth.TokenStorage``)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def test_oauth_flow_error(captured: Captured, base_url: str) -> None:
    """A 401 with an OAuth provider: the flow fails (no authorization server) inside the POST."""
    from mcp.client.auth import OAuthClientProvider

    async def no_browser(url: str) -> None:
        raise RuntimeError("no browser in tests")

    async def no_callback() -> AuthorizationCodeResult:
        raise RuntimeError("no callback in tests")

    provider = OAuthClientProvider(
        server_url=base_url + "/authn",
        client_metadata=OAuthClientMetadata(
            redirect_uris=[AnyUrl("http://127.0.0.1:1/cb")], client_name="t"
        ),
        storage=_MemoryTokens(),
        redirect_handler=no_browser,
        callback_handler=no_callback,
    )
    async with httpx2.AsyncClient(auth=provider) as http:
        await _raw_handshake_fails(http, base_url + "/authn")
    span = captured.one("initialize")
    attrs = span.attributes or {}
    assert attrs[A.AUTH_ERROR] == "oauth_error"
    assert attrs[A.ERROR_TYPE] == "oauth_error"
    assert attrs[A.TRANSPORT_OUTCOME] == "ok"  # the flow started from the server's own 401
    assert span.status.status_code is StatusCode.ERROR


async def test_progress_for_another_token(captured: Captured, base_url: str) -> None:
    """A progress notification on this request's stream that names another token is recorded as
    inconsistent evidence (``token_match=False``); the matching one as consistent."""
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with Client(base_url + "/mcp", mode="legacy") as client:
        await client.call_tool("progress_stray", {}, progress_callback=on_progress)
    events = [dict(e.attributes or {}) for e in captured.one("tools/call progress_stray").events]
    assert events == [
        {A.PROGRESS_TOKEN_MATCH: False, A.PROGRESS_VALUE: 1.0, A.PROGRESS_TOTAL: 2.0},
        {A.PROGRESS_VALUE: 1.0, A.PROGRESS_TOTAL: 2.0, A.PROGRESS_TOKEN_MATCH: True},
    ]
    assert seen == [1.0]  # the SDK itself drops the stray one
