"""Session-per-call clients: the catalog is the server's, not one session's (docs/model.md#scope).

LangChain's default ``MultiServerMCPClient(...).get_tools()`` and llama-index's ``BasicMCPClient``
list the tools in one session and run every call in a fresh one (``initialize``, ``tools/call``).
Judged one session at a time, every such call read ``stale_catalog`` / ``catalog_no_discovery``:
a healthy call never read healthy and an ``isError`` read as a catalog problem. Now a session
without a discovery of its own inherits the last complete discovery of the same server (and says
so), and a ``list_changed`` heard by any session makes the catalog stale for all of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from tests.support.framework_cells import tool_calls
from tests.support.matrix_drivers import Events, connect
from tests.support.processor_helpers import Pipeline
from tests.support.readme_policy import installed_readme_policy

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio

TRANSPORTS = ["stdio", "http"]


def row(span: ReadableSpan) -> tuple[Any, ...]:
    a = span.attributes or {}
    return (span.name, a.get(A.VERDICT), a.get(A.REASON), a.get(A.CATALOG_INHERITED))


async def _fresh_call(
    transport: str,
    url: str,
    name: str,
    arguments: dict[str, Any],
    *,
    listed: bool = False,
    read_timeout: float | None = None,
) -> None:
    """One call in a session of its own, as a session-per-call client makes it (``listed``: the
    session lists the tools itself first, as a long-lived session does)."""
    try:
        async with connect("session", transport, url, Events()) as agent:
            if listed:
                await agent.list_all()
            await agent.call(name, arguments, read_timeout=read_timeout)
    except Exception:  # an MCP error answer or a timeout is part of the scenario
        pass


async def _fresh_change(transport: str, url: str) -> None:
    """A session that hears the server announce a change (``list_changed``)."""
    async with connect("session", transport, url, Events()) as agent:
        await agent.until_list_changed()


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_calls_in_fresh_sessions_inherit_the_servers_discovery(
    transport: str, verdicts: Pipeline, reference_url: str
) -> None:
    url = reference_url + "/mcp"
    ticket = {"title": "t", "priority": "p"}
    with anyio.fail_after(120):
        async with connect("session", transport, url, Events()) as discovery:
            await discovery.list_all()
        await _fresh_call(transport, url, "create_ticket", ticket)
        await _fresh_call(transport, url, "fail", {})
        await _fresh_change(transport, url)
        await _fresh_call(transport, url, "lookup", {})
        async with connect("session", transport, url, Events()) as again:
            await again.list_all()
        await _fresh_call(transport, url, "create_ticket", ticket)
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    rows = [row(s) for s in tool_calls(verdicts) if s.name != "tools/call trigger_change"]
    assert rows == [
        ("tools/call create_ticket", "healthy", "ok", True),
        ("tools/call fail", "tool_failed", "is_error", True),
        ("tools/call lookup", "stale_catalog", "catalog_signal_after_discovery", True),
        ("tools/call create_ticket", "healthy", "ok", True),
    ]
    ages = [(s.attributes or {})[A.CATALOG_INHERITED_AGE_S] for s in tool_calls(verdicts)]
    assert all(isinstance(age, float) and 0 <= age < 120 for age in ages)


async def test_another_server_inherits_nothing(verdicts: Pipeline, reference_url: str) -> None:
    """The stdio server and the HTTP server are two servers: a discovery of one is not the
    other's, so a call to the undiscovered one stays ``stale_catalog`` (never green)."""
    with anyio.fail_after(60):
        async with connect("session", "stdio", reference_url + "/mcp", Events()) as discovery:
            await discovery.list_all()
        await _fresh_call("http", reference_url + "/mcp", "create_ticket", {"title": "t"})
    [call] = tool_calls(verdicts)
    assert row(call)[1:] == ("stale_catalog", "catalog_no_discovery", None)


@pytest.fixture
def readme_policy() -> Iterator[None]:
    """The README's declarative outcome policy (its ``outcomes.toml``: read-only tools need no
    verifier), installed as ``OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES`` would install it."""
    with installed_readme_policy():
        yield


#: (tool, arguments, read timeout) -> the verdict and reason of a session that listed the tools.
CONTRACT_CASES: list[tuple[str, dict[str, Any], float | None, tuple[str, str]]] = [
    ("no_such_tool", {}, None, ("stale_catalog", "catalog_unknown_tool_called")),
    ("create_ticket", {"title": "t"}, None, ("stale_catalog", "catalog_missing_required_argument")),
    ("lookup", {}, None, ("healthy", "outcome_not_required")),
    ("lookup", {"seconds": 3}, 0.5, ("tool_failed", "timeout")),
]


@pytest.mark.usefixtures("create_ticket_verified", "readme_policy")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_inherited_session_checks_calls_as_a_listing_one(
    transport: str, verdicts: Pipeline, reference_url: str
) -> None:
    """Unknown tool, missing required argument, ``readOnlyHint`` under the README's outcome
    policy: a fresh session reads each call exactly as a session that listed the tools. Before,
    the instrumentation checked calls against its own session's discovery only: the unknown tool
    read what the server answered, the missing argument went unseen, and the read-only tool lost
    its hint (``unverified`` when it answered, ``effect_unknown`` when it timed out)."""
    url = reference_url + "/mcp"
    with anyio.fail_after(120):
        for name, arguments, timeout, _ in CONTRACT_CASES:
            await _fresh_call(transport, url, name, arguments, listed=True, read_timeout=timeout)
        async with connect("session", transport, url, Events()) as discovery:
            await discovery.list_all()
        for name, arguments, timeout, _ in CONTRACT_CASES:
            await _fresh_call(transport, url, name, arguments, read_timeout=timeout)
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    rows = [row(s) for s in tool_calls(verdicts)]
    expected = [(f"tools/call {name}", *verdict) for name, _, _, verdict in CONTRACT_CASES]
    assert rows[: len(CONTRACT_CASES)] == [(*r, None) for r in expected]  # listed themselves
    assert rows[len(CONTRACT_CASES) :] == [(*r, True) for r in expected]  # inherited
