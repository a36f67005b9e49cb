"""A catalog that really changes, and an agent that keeps its old tools (docs/model.md#catalog).

``changing_server.py`` adds a tool on ``trigger_change`` and announces it. The client re-lists, so
discovery converges on the new catalog; what the agent *installed* is what its framework reported
(``record_installed_tools``, as the framework hooks do). An agent that keeps offering the tools it
installed from the old discovery, never installing again, reads ``stale`` (``digest_mismatch``:
its install was compared with another discovery than the last), on every SDK line and transport;
one that installs from the new list reads ``converged``, the old tools included: they are an
unchanged subset of it (docs/model.md#installed-subsets).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.support.matrix_drivers import (
    CHANGING_SERVER,
    SERVER_PYTHON,
    Driver,
    Events,
    connect,
    open_stdio,
)
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health import record_installed_tools

pytestmark = pytest.mark.anyio


async def _tools(agent: Driver) -> list[Any]:
    result = await agent.session.list_tools()
    return list(result.tools)


def _open(transport: str, url: str) -> Any:
    if transport == "stdio":
        from mcp import StdioServerParameters

        params = StdioServerParameters(command=SERVER_PYTHON, args=[str(CHANGING_SERVER), "stdio"])
        return open_stdio(params, Events())
    return connect("session", "http", url + "/mcp", Events())


@pytest.mark.parametrize("keeps_old_tools", [True, False], ids=["keeps-old", "installs-new"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_an_agent_that_keeps_its_old_tools_is_stale(
    transport: str, keeps_old_tools: bool, verdicts: Pipeline, changing_url: str
) -> None:
    with anyio.fail_after(60):
        async with _open(transport, changing_url) as agent:
            old = await _tools(agent)
            record_installed_tools(agent.session, old)
            await agent.until_list_changed()
            new = await _tools(agent)  # the client re-lists: discovery converges
            assert {t.name for t in new} - {t.name for t in old} == {"added_tool"}
            if not keeps_old_tools:
                record_installed_tools(agent.session, new)
                record_installed_tools(agent.session, old)  # an unchanged subset of the new list
            await agent.call("create_ticket", {"title": "t"})
    installs = [s.attributes or {} for s in verdicts.named(A.INSTALL_SPAN_NAME)]
    call = verdicts.last("tools/call create_ticket").attributes or {}
    if keeps_old_tools:
        assert [i[A.CATALOG_VERDICT] for i in installs] == ["converged"]  # then, on the old list
        assert (call[A.VERDICT], call[A.REASON]) == ("stale_catalog", "catalog_digest_mismatch")
    else:
        assert [i[A.CATALOG_VERDICT] for i in installs] == ["converged"] * 3
        assert [i[A.CATALOG_CLIENT_TOOL_COUNT] for i in installs] == [3, 4, 3]
        assert call[A.CATALOG_VERDICT] == "converged"
