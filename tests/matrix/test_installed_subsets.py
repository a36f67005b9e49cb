"""A subset install is not drift (docs/model.md#catalog), and closed sessions stay closed.

Agent frameworks hand their model what their tool filters keep (openai-agents ``tool_filter``,
strands ``tool_filters``, google-adk ``tool_filter``, pydantic-ai's filtered toolsets) and report
that subset (``record_installed_tools``, as the framework hooks do). Compared by whole-catalog
digest, every filtered agent read ``stale`` / ``digest_mismatch`` and every call
``stale_catalog``. Now the install is compared tool by tool with the discovery: equal
definitions of fewer tools converge; a changed definition, a tool the server does not list, or no
tool at all of a non-empty discovery each read ``stale`` with a reason saying which.

LangChain's ``get_tools()`` reports its install after its listing session closed: that span
belongs to the server and never brings the session back (the processor kept every such session
for an hour). Runs on every cell, both SDK lines, stdio and streamable HTTP.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.support.framework_cells import tool_calls
from tests.support.matrix_drivers import Driver, Events, connect
from tests.support.matrix_drivers import _next_cursor as next_cursor
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health import record_installed_tools
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio

TRANSPORTS = ["stdio", "http"]
KEPT = ("create_ticket", "lookup")


async def _listed(agent: Driver) -> list[dict[str, Any]]:
    """Every page of the session's ``tools/list``, as wire dicts (what a framework keeps)."""
    from mcp import types

    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await agent.session.list_tools(params=params)
        tools += [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools]
        cursor = next_cursor(page)
        if cursor is None:
            return tools


def _install(span: Any) -> tuple[Any, ...]:
    a = span.attributes or {}
    return (
        a.get(A.CATALOG_VERDICT),
        a.get(A.CATALOG_REASON),
        a.get(A.CATALOG_CLIENT_TOOL_COUNT),
        a.get(A.CATALOG_TOOL_COUNT),
        tuple(a.get(A.CATALOG_INSTALL_CHANGED, ())),
        tuple(a.get(A.CATALOG_INSTALL_UNLISTED, ())),
    )


def _subset(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for t in tools if t["name"] in KEPT]


def _changed(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {**t, "description": "reworded"} if t["name"] == "lookup" else t for t in _subset(tools)
    ]


def _unlisted(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*_subset(tools), {"name": "retired_tool", "inputSchema": {"type": "object"}}]


CASES = {
    "subset": (_subset, ("converged", "ok", 2, 12, (), ()), ("healthy", "ok")),
    "changed": (
        _changed,
        ("stale", "digest_mismatch", 2, 12, ("lookup",), ()),
        ("stale_catalog", "catalog_digest_mismatch"),
    ),
    "unlisted": (
        _unlisted,
        ("stale", "installed_tool_unlisted", 3, 12, (), ("retired_tool",)),
        ("stale_catalog", "catalog_installed_tool_unlisted"),
    ),
    "nothing": (
        lambda _: [],
        ("stale", "nothing_installed", 0, 12, (), ()),
        ("stale_catalog", "catalog_nothing_installed"),
    ),
}


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_install_is_judged_tool_by_tool(
    transport: str, case: str, verdicts: Pipeline, reference_url: str
) -> None:
    offered, install, call = CASES[case]
    with anyio.fail_after(60):
        async with connect("session", transport, reference_url + "/mcp", Events()) as agent:
            record_installed_tools(agent.session, offered(await _listed(agent)))
            await agent.call("create_ticket", {"title": "t", "priority": "p"})
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    [span] = verdicts.named(A.INSTALL_SPAN_NAME)
    assert _install(span) == install
    attrs = span.attributes or {}
    assert attrs[A.CATALOG_DIGEST] == verdicts.last("tools/list").attributes[A.CATALOG_DIGEST]  # type: ignore[index]
    [created] = tool_calls(verdicts)
    assert ((created.attributes or {})[A.VERDICT], (created.attributes or {})[A.REASON]) == call


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_installs_after_the_listing_session_closed_leave_no_session(
    transport: str, verdicts: Pipeline, reference_url: str
) -> None:
    """LangChain's ``get_tools()`` 50 times: list in a session, close it, report the filtered
    install; then a call in a fresh session. The processor keeps no session, and the server's
    catalog (discovery and install) still reads ``converged`` for the call."""
    url = reference_url + "/mcp"
    rounds = 50 if transport == "http" else 5  # stdio: a server process per session
    with anyio.fail_after(240):
        for _ in range(rounds):
            async with connect("session", transport, url, Events()) as listing:
                tools = await _listed(listing)
            record_installed_tools(listing.session, _subset(tools))  # after its session ended
        assert len(verdicts.processor._engine.sessions) == 0
        async with connect("session", transport, url, Events()) as agent:
            await agent.call("create_ticket", {"title": "t", "priority": "p"})
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert len(verdicts.processor._engine.sessions) == 0
    installs = verdicts.named(A.INSTALL_SPAN_NAME)
    assert len(installs) == rounds
    assert {_install(s) for s in installs} == {("converged", "ok", 2, 12, (), ())}
    [created] = tool_calls(verdicts)
    attrs = created.attributes or {}
    assert (attrs[A.VERDICT], attrs[A.REASON], attrs[A.CATALOG_INHERITED]) == (
        "healthy",
        "ok",
        True,
    )
    assert attrs[A.CATALOG_CLIENT_SOURCE] == "digest"  # judged against the agent's install
