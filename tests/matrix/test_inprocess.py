"""In-process sessions on every SDK line: the default ``mcp.Client(server)`` (2.x, direct
dispatcher, no wire) and 1.x's memory streams. Every CLIENT span carries ``jsonrpc.request.id``
and no ``network.transport`` (semconv has no value for in-process), with the table's verdicts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from opentelemetry.trace import SpanKind
from tests.support.in_process_1x import in_process_server_1x
from tests.support.matrix_drivers import MCP_MAJOR, Events, SessionDriver
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def _in_process() -> AsyncIterator[Any]:
    """The application's in-process session on the installed line (its default mode)."""
    if MCP_MAJOR == 1:
        from mcp.shared.memory import create_connected_server_and_client_session

        async with create_connected_server_and_client_session(in_process_server_1x()) as session:
            yield session
        return
    from mcp import Client
    from tests.integration.mcp_health_servers import build_server

    async with Client(build_server()) as client:
        yield client.session


async def test_in_process_sessions_have_request_ids_and_verdicts(verdicts: Pipeline) -> None:
    with anyio.fail_after(30):
        async with _in_process() as session:
            agent = SessionDriver(Events(), session)
            await agent.list_all()
            await agent.call("create_ticket", {"title": "t", "priority": "p"})
            await agent.call("fail", {})
    spans = [s for s in verdicts.spans() if s.kind is SpanKind.CLIENT]
    ids = [(s.attributes or {}).get(A.JSONRPC_REQUEST_ID) for s in spans]
    assert spans
    assert None not in ids
    assert len(set(ids)) == len(ids)
    assert all(A.NETWORK_TRANSPORT not in (s.attributes or {}) for s in spans)
    rows = [
        (s.name, (s.attributes or {}).get(A.VERDICT), (s.attributes or {}).get(A.REASON))
        for s in spans
        if s.name.startswith("tools/call")
    ]
    assert rows == [
        ("tools/call create_ticket", "unverified", "no_outcome_verifier"),
        ("tools/call fail", "tool_failed", "is_error"),
    ]
