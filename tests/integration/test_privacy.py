"""SPEC §2: run every scenario with canary secrets and search the exported bytes for them.

The canaries travel every indirect path a leak could take: arguments echoed in a JSON-RPC error
message, result values quoted by the SDK's output-schema ``RuntimeError``, progress messages,
the bearer token header, the stdio server's environment, a raw pagination cursor, and a
``WWW-Authenticate`` ``error_description``.
"""

from __future__ import annotations

import sys

import pytest
from tests.integration import scenarios
from tests.integration.mcp_health_servers import CANARIES, CANARY_ARG, CANARY_CURSOR, CANARY_RESULT
from tests.integration.mcp_health_support import STDIO_SERVER, Captured

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio


async def test_no_canary_is_exported(captured: Captured, http_base_url: str) -> None:
    rec = scenarios.Recorder()
    await scenarios.inprocess(rec)
    await scenarios.http(rec, http_base_url)
    await scenarios.stdio(rec, str(STDIO_SERVER))

    # the canaries really did reach the application through the SDK (the test is not vacuous)
    seen = repr(rec.outcomes)
    assert CANARY_ARG in seen  # echoed by the server's -32602 message
    assert CANARY_RESULT in seen  # in results and in the SDK's output-schema RuntimeError
    assert CANARY_CURSOR in seen  # the raw cursor the application received
    assert len(captured.spans()) > 60

    exported = captured.exported_bytes()
    leaked = [canary for canary in CANARIES if canary.encode() in exported]
    assert leaked == []
    # no status description anywhere: server messages are content
    assert all(s.status.description is None for s in captured.spans())


TARGET_CANARY = "target-canary-4f2a9c"


async def test_the_transport_target_is_hashed_never_exported(
    captured: Captured, http_base_url: str
) -> None:
    """A server is named by its transport target (docs/model.md#scope): the stdio command line
    and the URL, whose arguments and query often carry keys. Only a keyed hash is exported."""
    from mcp import Client, StdioServerParameters

    url = f"{http_base_url}/mcp?api_key={TARGET_CANARY}"
    async with Client(url) as client:
        await client.list_tools()
    stdio = StdioServerParameters(
        command=sys.executable, args=[str(STDIO_SERVER), f"--token={TARGET_CANARY}"]
    )
    async with Client(stdio, mode="legacy") as client:
        await client.list_tools()
    keys = {
        (s.attributes or {}).get(A.SERVER_TARGET_KEY)
        for s in captured.spans()
        if s.name in ("initialize", "server/discover")
    }
    assert len(keys - {None}) == 2  # two servers, each named by a 16-hex-digit key
    assert all(len(key) == 16 for key in keys - {None})
    assert TARGET_CANARY.encode() not in captured.exported_bytes()
