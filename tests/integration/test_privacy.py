"""SPEC §2: run every scenario with canary secrets and search the exported bytes for them.

The canaries travel every indirect path a leak could take: arguments echoed in a JSON-RPC error
message, result values quoted by the SDK's output-schema ``RuntimeError``, progress messages,
the bearer token header, the stdio server's environment, a raw pagination cursor, and a
``WWW-Authenticate`` ``error_description``.
"""

from __future__ import annotations

import pytest
import scenarios
from mcp_health_servers import CANARIES, CANARY_ARG, CANARY_CURSOR, CANARY_RESULT
from mcp_health_support import STDIO_SERVER, Captured

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
