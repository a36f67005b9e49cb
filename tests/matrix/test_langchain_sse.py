"""LangChain over SSE (``"transport": "sse"`` of ``MultiServerMCPClient``), the framework's real
agent loop (docs/model.md#server-identity): every fresh session of ``get_tools()`` and of each
call is a network session of one server (``tcp``, address, port, one target key), judged with its
authorization layer, and a server that refuses the connecting GET is one ``needs_auth``. Before,
the calls carried no transport and authorization ``not_applicable``, and a refused connect
exported nothing. Collected on the cells that install langchain-mcp-adapters (``mcp_latest_1x``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tests.matrix.test_langchain_default import _get_tools, _run_agent, calls
from tests.support.matrix_drivers import INTEGRATION, http_server
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    """``gateway_http.py``: an SSE server and refusing SSE endpoints on 127.0.0.1."""
    with http_server(str(INTEGRATION / "gateway_http.py"), "unused") as url:
        yield url


def _sse(url: str) -> dict[str, Any]:
    return {"transport": "sse", "url": url}


@pytest.mark.usefixtures("create_ticket_verified")
async def test_an_sse_agent_is_judged_as_a_network_agent(verdicts: Pipeline, gateway: str) -> None:
    with anyio.fail_after(120):
        tools = await _get_tools(_sse(gateway + "/sse"))
        steps = [("create_ticket", {"title": "t", "priority": "p"}), ("fail", {})]
        await _run_agent(tools, steps)
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert calls(verdicts) == [
        ("tools/call create_ticket", "healthy", "ok", True),
        ("tools/call fail", "tool_failed", "is_error", True),
    ]
    host, port = gateway.removeprefix("http://").split(":")
    spans = [dict(s.attributes or {}) for s in verdicts.spans() if s.name.startswith("tools/")]
    assert {(a[A.NETWORK_TRANSPORT], a[A.SERVER_ADDRESS], a[A.SERVER_PORT]) for a in spans} == {
        ("tcp", host, int(port))
    }
    assert len({a[A.SERVER_TARGET_KEY] for a in spans}) == 1  # every fresh session: one server
    call = verdicts.last("tools/call create_ticket").attributes or {}
    assert call[A.layer_attribute("authorization")] == "passed"


async def test_a_refused_sse_connect_is_one_needs_auth(verdicts: Pipeline, gateway: str) -> None:
    with anyio.fail_after(60), pytest.raises(Exception):  # noqa: B017, PT011  # the adapter's own
        await _get_tools(_sse(gateway + "/sse-authn"))
    connects = [dict(s.attributes or {}) for s in verdicts.named(A.CONNECT_SPAN_NAME)]
    assert [(a[A.VERDICT], a[A.REASON]) for a in connects] == [("needs_auth", "invalid_token")]
    assert verdicts.counts(A.METRIC_INCIDENTS, A.VERDICT) == {"needs_auth": 1}
