"""One server, one identity (docs/model.md#scope), on every SDK line, through the real client.

What tells servers apart: two in-process server objects with one name and version, two paths
behind one host and port (a gateway), the same URL with another query, one stdio command with
another environment or working directory. What is one server: every session of it, with a rotated
bearer token or after a reconnect (a new session id). What leaves the process: only
``server.address``, ``server.port`` and the handshake's server name, never a path, a query or an
environment value (the privacy canary).

Sharing is read off what the processor exports: a session that lists nothing itself is judged on
its server's discovery (``mcp_health.catalog.inherited = true``); a session of another server has
no discovery (``stale_catalog``, ``catalog_no_discovery``). Incidents are read off the call spans
(``mcp_health.incident.key`` and ``mcp_health.incident.attempt``): a healthy call clears the
incidents of its own server only.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from tests.support.matrix_drivers import (
    INTEGRATION,
    MCP_MAJOR,
    SERVER_PYTHON,
    STDIO_SERVER,
    Driver,
    Events,
    SessionDriver,
    http_server,
    open_stdio,
)
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio

#: The gateway's secrets: an API key in a path, in a query, in a stdio server's environment.
PATH_SECRET = "pathkey-0d9c41e7b2"
QUERY_SECRET = "querykey-5a7f03c9d1"
ENV_SECRET = "envkey-b83e2f6a40"
SECRETS = (PATH_SECRET, QUERY_SECRET, ENV_SECRET)
TICKET = {"title": "t", "priority": "p"}


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    """``gateway_http.py``: several servers behind one 127.0.0.1 host and port."""
    with http_server(str(INTEGRATION / "gateway_http.py"), PATH_SECRET) as url:
        yield url


# ----------------------------------------------------------------------------------------------
# Opening sessions
# ----------------------------------------------------------------------------------------------
@asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[Driver]:
    """A ``ClientSession`` over streamable HTTP, with a bearer token when given."""
    from mcp import ClientSession

    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    if MCP_MAJOR == 1:
        from mcp.client.streamable_http import streamablehttp_client

        async with (
            streamablehttp_client(url, headers=headers) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield SessionDriver(Events(), session)
        return
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield SessionDriver(Events(), session)


def twin(*tools: str) -> Any:
    """An in-process server named ``twin`` 1.0.0 offering ``tools`` (a fresh object each call)."""
    if MCP_MAJOR == 1:
        from mcp.server.fastmcp import FastMCP

        app = FastMCP("twin")
        for name in tools:
            app.add_tool(lambda: "done", name=name, description=name)
        return app
    import mcp_types as types
    from mcp.server.lowlevel import Server

    listed = [types.Tool(name=n, description=n, input_schema={"type": "object"}) for n in tools]

    async def on_list(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def on_call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="done")])

    return Server("twin", version="1.0.0", on_list_tools=on_list, on_call_tool=on_call)


@asynccontextmanager
async def in_process(server: Any) -> AsyncIterator[Driver]:
    """A session to an in-process server: memory streams on 1.x, ``mcp.Client`` on 2.x."""
    if MCP_MAJOR == 1:
        from mcp.shared.memory import create_connected_server_and_client_session

        async with create_connected_server_and_client_session(server) as session:
            yield SessionDriver(Events(), session)
        return
    from mcp import Client

    async with Client(server) as client:
        yield SessionDriver(Events(), client.session)


def stdio(env: dict[str, str] | None = None, cwd: Path | None = None) -> Any:
    from mcp import StdioServerParameters

    return open_stdio(
        StdioServerParameters(command=SERVER_PYTHON, args=[STDIO_SERVER], env=env, cwd=cwd),
        Events(),
    )


# ----------------------------------------------------------------------------------------------
# Reading the exported spans
# ----------------------------------------------------------------------------------------------
def calls(pipeline: Pipeline, tool: str) -> list[dict[str, Any]]:
    """The exported attributes of every ``tools/call`` of ``tool`` our instrumentation recorded
    (not the SDK's own spans, which reach the pipeline too), in the order they ended."""
    spans = pipeline.named(f"tools/call {tool}")
    return [dict(s.attributes or {}) for s in spans if A.SESSION_KEY in (s.attributes or {})]


def shared(call: dict[str, Any]) -> bool:
    """Whether the call was judged on another session's discovery of the same server."""
    return call.get(A.CATALOG_INHERITED) is True


def assert_other_server(call: dict[str, Any]) -> None:
    """Judged as a server nobody listed: never another server's catalog, never green."""
    assert not shared(call), call
    assert call.get(A.CATALOG_VERDICT) != "converged", sorted(call.items())
    assert call[A.VERDICT] == "stale_catalog", call
    assert call[A.REASON] == "catalog_no_discovery", call


async def list_then_call(first: Any, second: Any, tool: str) -> None:
    """List the tools in a session of ``first``, then call ``tool`` in a session of ``second``
    that lists nothing itself."""
    with anyio.fail_after(60):
        async with first as agent:
            await agent.list_all()
        async with second as agent:
            await agent.call(tool, {})


# ----------------------------------------------------------------------------------------------
# What tells servers apart
# ----------------------------------------------------------------------------------------------
async def test_two_in_process_servers_with_one_name_are_two_servers(verdicts: Pipeline) -> None:
    server_a, server_b = twin("alpha"), twin("alpha", "beta_only")
    await list_then_call(in_process(server_a), in_process(server_b), "beta_only")
    await list_then_call(in_process(server_a), in_process(server_a), "alpha")
    other, same = calls(verdicts, "beta_only")[0], calls(verdicts, "alpha")[0]
    assert_other_server(other)
    assert shared(same), same  # a second session of the same server object shares its catalog


async def test_same_url_with_another_query_is_another_server(
    verdicts: Pipeline, gateway: str
) -> None:
    tenant_a, tenant_b = f"{gateway}/github/mcp?tenant=a", f"{gateway}/github/mcp?tenant=b"
    await list_then_call(http_session(tenant_a), http_session(tenant_b), "lookup")
    await list_then_call(http_session(tenant_a), http_session(tenant_a), "typed")
    assert_other_server(calls(verdicts, "lookup")[0])
    assert shared(calls(verdicts, "typed")[0])


@pytest.mark.parametrize("differs", ["environment", "working_directory"])
async def test_one_stdio_command_in_another_setting_is_another_server(
    verdicts: Pipeline, differs: str, tmp_path: Path
) -> None:
    if differs == "environment":
        first, second = stdio(env={"TENANT": "a"}), stdio(env={"TENANT": "b"})
        again = stdio(env={"TENANT": "a"})
    else:
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        first, second = stdio(cwd=tmp_path / "a"), stdio(cwd=tmp_path / "b")
        again = stdio(cwd=tmp_path / "a")
    await list_then_call(first, second, "lookup")
    await list_then_call(stdio(**_setting(differs, tmp_path)), again, "typed")
    assert_other_server(calls(verdicts, "lookup")[0])
    assert shared(calls(verdicts, "typed")[0])


def _setting(differs: str, tmp_path: Path) -> dict[str, Any]:
    return {"env": {"TENANT": "a"}} if differs == "environment" else {"cwd": tmp_path / "a"}


# ----------------------------------------------------------------------------------------------
# What is one server
# ----------------------------------------------------------------------------------------------
async def test_a_rotated_token_and_a_reconnect_are_the_same_server(
    verdicts: Pipeline, gateway: str
) -> None:
    url = f"{gateway}/github/mcp"
    await list_then_call(http_session(url, "token-1"), http_session(url, "token-2"), "lookup")
    await list_then_call(http_session(url), http_session(url), "fail")
    rotated, reconnected = calls(verdicts, "lookup")[0], calls(verdicts, "fail")[0]
    assert shared(rotated), rotated
    assert shared(reconnected), reconnected
    ids = {s.attributes.get(A.MCP_SESSION_ID) for s in verdicts.named("initialize") if s.attributes}
    assert len(ids) == 4, ids  # four sessions, four session ids: still one server


# ----------------------------------------------------------------------------------------------
# Incidents per server
# ----------------------------------------------------------------------------------------------
async def test_a_healthy_call_to_one_gateway_path_never_clears_another_paths_incident(
    verdicts: Pipeline, gateway: str, create_ticket_verified: None
) -> None:
    jira, github = f"{gateway}/jira/mcp", f"{gateway}/github/mcp"
    with anyio.fail_after(60):
        for url, tool in ((jira, "fail"), (github, "fail"), (github, "create_ticket")):
            async with http_session(url) as agent:
                await agent.list_all()
                await agent.call(tool, TICKET if tool == "create_ticket" else {})
        async with http_session(jira) as agent:
            await agent.list_all()
            await agent.call("fail", {})
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)  # every call's span ended
    jira_first, github_fail, jira_again = calls(verdicts, "fail")
    assert calls(verdicts, "create_ticket")[0][A.VERDICT] == "healthy"
    assert jira_first[A.VERDICT] == github_fail[A.VERDICT] == "tool_failed"
    assert jira_first[A.INCIDENT_KEY] != github_fail[A.INCIDENT_KEY]
    # github's healthy call cleared github's incident, never jira's: its second failure counts on
    assert jira_again[A.INCIDENT_KEY] == jira_first[A.INCIDENT_KEY]
    assert jira_again[A.INCIDENT_ATTEMPT] == 2
    # metrics are labelled by the exported server label: address, port and server name
    opened = verdicts.metric_points(A.METRIC_INCIDENTS)
    assert opened
    host, port = gateway.removeprefix("http://").split(":")
    for point in opened:
        labels = point["attributes"]
        assert labels[A.SERVER_ADDRESS] == host
        assert labels[A.SERVER_PORT] == int(port)
        assert labels[A.SERVER_NAME] == "health-test-server"
    assert sum(point["value"] for point in opened) == 2  # jira's and github's


# ----------------------------------------------------------------------------------------------
# Privacy: what names a server never leaves the process
# ----------------------------------------------------------------------------------------------
async def test_secrets_in_a_path_a_query_and_an_environment_never_leave_the_process(
    verdicts: Pipeline, gateway: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"{gateway}/k/{PATH_SECRET}/mcp?api_key={QUERY_SECRET}"
    with anyio.fail_after(60):
        async with http_session(url) as agent:
            await agent.list_all()
            await agent.call("lookup", {})
        async with stdio(env={"API_KEY": ENV_SECRET}) as agent:
            await agent.list_all()
            await agent.call("lookup", {})
    spans = verdicts.spans()
    assert len([s for s in spans if s.name == "tools/call lookup"]) == 2
    exported = [_span_text(span) for span in spans]
    exported += [repr(p) for name in _METRICS for p in verdicts.metric_points(name)]
    exported += [record.getMessage() for record in caplog.records if _ours(record)]
    for secret in SECRETS:
        assert not [text for text in exported if secret in text], secret
    assert any(A.SERVER_TARGET_KEY in text for text in exported)  # the identity, as a keyed hash


_METRICS = (
    A.METRIC_CALLS,
    A.METRIC_OUTCOMES,
    A.METRIC_CATALOG_VERDICTS,
    A.METRIC_INCIDENTS,
    A.METRIC_MCP_CLIENT_OPERATION_DURATION,
    A.METRIC_MCP_CLIENT_SESSION_DURATION,
)


def _span_text(span: ReadableSpan) -> str:
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    return repr((span.name, dict(span.attributes or {}), events, span.status.description))


def _ours(record: logging.LogRecord) -> bool:
    return record.name.startswith("otel_mcp_health")
