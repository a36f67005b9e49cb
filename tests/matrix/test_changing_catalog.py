"""A catalog that really changes, and an agent that keeps its old tools (docs/model.md#catalog).

``changing_server.py`` adds a tool on ``trigger_change`` and announces it. The client re-lists, so
discovery converges on the new catalog; what the agent *installed* is what its framework reported
(``record_installed_tools``, as the framework hooks do). An agent that keeps offering the old
tools reads ``stale`` (``digest_mismatch``), on every SDK line and transport; one that installs
the new list reads ``converged``.
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
            record_installed_tools(agent.session, old if keeps_old_tools else new)
            await agent.call("create_ticket", {"title": "t"})
    install = verdicts.named(A.INSTALL_SPAN_NAME)[-1].attributes or {}
    call = verdicts.last("tools/call create_ticket").attributes or {}
    if keeps_old_tools:
        assert (install[A.CATALOG_VERDICT], install[A.CATALOG_REASON]) == (
            "stale",
            "digest_mismatch",
        )
        assert (call[A.VERDICT], call[A.REASON]) == ("stale_catalog", "catalog_digest_mismatch")
    else:
        assert install[A.CATALOG_VERDICT] == "converged"
        assert call[A.CATALOG_VERDICT] == "converged"
