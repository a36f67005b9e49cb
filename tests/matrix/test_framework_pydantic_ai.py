"""pydantic-ai's own agent loop over ``MCPToolset``, with its shipped ``FunctionModel``.

The model is scripted (``FunctionModel``: one tool call per step, then text) and the agent runs
for real: its toolset connects (``fastmcp.Client``, one session per run), lists, installs the
tools at every step (``MCPToolset.get_tools``, the framework hook's install) and calls them.
Every cell runs over stdio and streamable HTTP; each asserts the verdict of the call it is about:
healthy, ``isError``, a catalog change with the default toolset (2026-07-28 era: the change is
never heard, the bounded refresh policy judges) and with a pre-built ``initialize``-era client
(heard, not handled: stale), and a 401 at connect (HTTP only: stdio has no authorization).
Collected where pydantic-ai-slim[mcp] is installed (fastmcp-slim 4.x, mcp 2.x).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tests.support.framework_cells import assert_installed, assert_judged, calls, listed_tools
from tests.support.matrix_drivers import (
    CHANGING_SERVER,
    SERVER_PYTHON,
    STDIO_SERVER,
    assert_installed_once,
)
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio

TRANSPORTS = ["stdio", "http"]
TICKET = {"title": "t", "priority": "p"}
HANDSHAKES = ("server/discover", "initialize")


def _target(transport: str, url: str, script: list[str]) -> Any:
    """What ``MCPToolset`` / ``fastmcp.Client`` connect to: a stdio transport, or a URL."""
    from fastmcp.client.transports import StdioTransport

    if transport == "stdio":
        return StdioTransport(command=SERVER_PYTHON, args=script)
    return url + "/mcp"


REFERENCE = [STDIO_SERVER]
CHANGING = [str(CHANGING_SERVER), "stdio"]


def _model(steps: list[tuple[str, dict[str, Any]]], offers: list[set[str]]) -> Any:
    """A ``FunctionModel`` that calls ``steps`` one per model request, then answers text; it
    records the tool names each request offered."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    script: Iterator[tuple[str, dict[str, Any]]] = iter(steps)

    def respond(messages: list[Any], info: Any) -> ModelResponse:
        offers.append({tool.name for tool in info.function_tools})
        step = next(script, None)
        if step is None:
            return ModelResponse(parts=[TextPart("done")])
        name, args = step
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"call-{len(offers)}")])

    return FunctionModel(respond)


async def _run(toolset: Any, steps: list[tuple[str, dict[str, Any]]]) -> list[set[str]]:
    from pydantic_ai import Agent

    offers: list[set[str]] = []
    agent = Agent(_model(steps, offers), toolsets=[toolset])
    result = await agent.run("go")
    assert result.output == "done"
    return offers


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_healthy_and_is_error_calls(
    transport: str, verdicts: Pipeline, reference_url: str
) -> None:
    from pydantic_ai.mcp import MCPToolset

    with anyio.fail_after(120):
        toolset = MCPToolset(_target(transport, reference_url, REFERENCE))
        # isError comes back to the model as a retry prompt (tool_error_behavior="retry")
        await _run(toolset, [("create_ticket", TICKET), ("fail", {})])
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert calls(verdicts) == [
        ("tools/call create_ticket", "healthy", "ok"),
        ("tools/call fail", "tool_failed", "is_error"),
    ]
    # one install (the cached list is not reported again at every step), against the server
    assert_installed_once(verdicts)


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_default_toolset_never_hears_the_change(
    transport: str, verdicts: Pipeline, changing_url: str
) -> None:
    """The default toolset (``cache_tools=True``) negotiates the 2026-07-28 era with an mcp 2.x
    server (``server/discover``, no ``initialize``) and opens no ``subscriptions/listen``: the
    ``list_changed`` that would drop its cache never arrives, so the agent keeps its old tools.
    Nobody heard a signal: the catalog is judged by the bounded refresh policy (300 s)."""
    from pydantic_ai.mcp import MCPToolset

    with anyio.fail_after(120):
        toolset = MCPToolset(_target(transport, changing_url, CHANGING))
        offers = await _run(toolset, [("trigger_change", {}), ("create_ticket", {"title": "t"})])
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert [s.name for s in verdicts.spans() if s.name in HANDSHAKES] == ["server/discover"]
    assert all("added_tool" not in offer for offer in offers)
    assert calls(verdicts)[-1] == ("tools/call create_ticket", "healthy", "ok")
    call = verdicts.last("tools/call create_ticket").attributes or {}
    assert (call[A.CATALOG_VERDICT], call[A.CATALOG_MAX_AGE_S]) == ("converged", 300.0)


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_prebuilt_legacy_client_keeps_its_old_tools(
    transport: str, verdicts: Pipeline, changing_url: str
) -> None:
    """A pre-built ``fastmcp.Client`` in the ``initialize`` era hears ``list_changed``, but gets no
    cache-dropping handler from the toolset (documented): the agent's next call after the server
    added a tool runs on the old catalog."""
    from fastmcp import Client
    from pydantic_ai.mcp import MCPToolset

    with anyio.fail_after(120):
        client = Client(_target(transport, changing_url, CHANGING), mode="legacy")
        offers = await _run(
            MCPToolset(client), [("trigger_change", {}), ("create_ticket", {"title": "t"})]
        )
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert [s.name for s in verdicts.spans() if s.name in HANDSHAKES] == ["initialize"]
    assert all("added_tool" not in offer for offer in offers)
    assert calls(verdicts)[-1] == (
        "tools/call create_ticket",
        "stale_catalog",
        "catalog_signal_after_discovery",
    )


async def test_a_401_at_connect_is_one_needs_auth(verdicts: Pipeline, reference_url: str) -> None:
    from pydantic_ai.mcp import MCPToolset

    toolset = MCPToolset(reference_url + "/authn")
    with anyio.fail_after(60), pytest.raises(Exception):  # noqa: B017, PT011  # the toolset's own
        await _run(toolset, [("create_ticket", TICKET)])
    handshakes = [s for s in verdicts.spans() if s.name in HANDSHAKES]
    # the era probe answered 401 too; it is superseded by the initialize that reads needs_auth
    assert [(s.name, (s.attributes or {}).get(A.VERDICT)) for s in handshakes] == [
        ("server/discover", None),
        ("initialize", "needs_auth"),
    ]
    assert verdicts.counts(A.METRIC_INCIDENTS, A.VERDICT) == {"needs_auth": 1}


# ---- filtered installs: what the model is offered, mapped back to the MCP definitions ----------
SUBSET = {"create_ticket", "fail"}


@pytest.fixture(scope="module")
def reference_tools() -> list[dict[str, Any]]:
    """The reference server's catalog as it lists it (every page, wire dicts)."""
    return listed_tools(*REFERENCE)


def _subset(ctx: Any, tool: Any) -> bool:
    return bool(tool.name in SUBSET)


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_filtered_toolset_installs_what_the_model_is_offered(
    transport: str, verdicts: Pipeline, reference_url: str, reference_tools: list[dict[str, Any]]
) -> None:
    """``.filtered()`` wraps the ``MCPToolset``: the model is offered two of the twelve tools, and
    the install is those two definitions, not all the inner toolset listed."""
    from pydantic_ai.mcp import MCPToolset

    with anyio.fail_after(120):
        toolset = MCPToolset(_target(transport, reference_url, REFERENCE)).filtered(_subset)
        offers = await _run(toolset, [("create_ticket", TICKET)])
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert offers == [SUBSET, SUBSET]
    assert_installed(verdicts, reference_tools, SUBSET)
    # a subset of byte-equal definitions is the converged catalog, and the call healthy
    assert_judged(verdicts, "converged", "ok")
    assert calls(verdicts) == [("tools/call create_ticket", "healthy", "ok")]


@pytest.mark.usefixtures("create_ticket_verified")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_prefixed_and_renamed_tools_map_back_to_their_mcp_definitions(
    transport: str, verdicts: Pipeline, reference_url: str, reference_tools: list[dict[str, Any]]
) -> None:
    """Filtered, then prefixed, then renamed: the model calls ``open_ticket`` and ``jira_fail``,
    the wire carries ``create_ticket``, and the install is the MCP definitions of both."""
    from pydantic_ai.mcp import MCPToolset

    with anyio.fail_after(120):
        toolset = (
            MCPToolset(_target(transport, reference_url, REFERENCE))
            .filtered(_subset)
            .prefixed("jira")
            .renamed({"open_ticket": "jira_create_ticket"})
        )
        offers = await _run(toolset, [("open_ticket", TICKET)])
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert offers[0] == {"open_ticket", "jira_fail"}
    assert [name for name, *_ in calls(verdicts)] == ["tools/call create_ticket"]
    assert_installed(verdicts, reference_tools, SUBSET)
    # a subset of byte-equal definitions is the converged catalog, and the call healthy
    assert_judged(verdicts, "converged", "ok")
    assert calls(verdicts) == [("tools/call create_ticket", "healthy", "ok")]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_filter_that_hides_every_tool_is_not_converged(
    transport: str, verdicts: Pipeline, reference_url: str, reference_tools: list[dict[str, Any]]
) -> None:
    """A filter that hides every tool offers the model nothing: the install is empty and the
    catalog the agent holds is not the converged one the server listed."""
    from pydantic_ai.mcp import MCPToolset

    with anyio.fail_after(120):
        toolset = MCPToolset(_target(transport, reference_url, REFERENCE))
        offers = await _run(toolset.filtered(lambda ctx, tool: False), [])
    assert offers == [set()]
    assert_installed(verdicts, reference_tools, set())
    assert_judged(verdicts, "stale", "nothing_installed")


def _shouting(inner: Any) -> Any:
    """A toolset class of the application's own over an ``MCPToolset``: it offers the MCP tools
    under upper-case names, a renaming the hook cannot undo."""
    from dataclasses import replace

    from pydantic_ai.toolsets import AbstractToolset

    class Shouting(AbstractToolset[Any]):
        """Offers ``inner``'s tools upper-cased and calls them by their own names."""

        @property
        def id(self) -> str | None:
            return None

        async def __aenter__(self) -> Any:
            await inner.__aenter__()
            return self

        async def __aexit__(self, *args: object) -> Any:
            return await inner.__aexit__(*args)

        async def get_tools(self, ctx: Any) -> dict[str, Any]:
            tools = await inner.get_tools(ctx)
            return {
                name.upper(): replace(
                    tool, toolset=self, tool_def=replace(tool.tool_def, name=name.upper())
                )
                for name, tool in tools.items()
            }

        async def call_tool(self, name: str, tool_args: Any, ctx: Any, tool: Any) -> Any:
            own = replace(tool, tool_def=replace(tool.tool_def, name=name.lower()))
            return await inner.call_tool(name.lower(), tool_args, ctx, own)

    return Shouting()


@pytest.mark.usefixtures("create_ticket_verified")
async def test_a_toolset_it_cannot_walk_is_one_warning_and_no_record(
    verdicts: Pipeline, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent runs as without the hook; the install is not guessed: one warning, no record,
    and the call is judged on the discovery."""
    from pydantic_ai.mcp import MCPToolset

    from otel_mcp_health.frameworks import _report

    monkeypatch.setattr(_report, "_WARNED", set())
    with anyio.fail_after(120):
        toolset = _shouting(MCPToolset(_target("stdio", "", REFERENCE)))
        offers = await _run(toolset, [("CREATE_TICKET", TICKET), ("FAIL", {})])
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    assert "CREATE_TICKET" in offers[0]
    assert calls(verdicts) == [
        ("tools/call create_ticket", "healthy", "ok"),
        ("tools/call fail", "tool_failed", "is_error"),
    ]
    assert not verdicts.named(A.INSTALL_SPAN_NAME)
    warnings = [r for r in caplog.records if "otel-mcp-health: pydantic-ai" in r.getMessage()]
    assert len(warnings) == 1
    call = verdicts.last("tools/call create_ticket").attributes or {}
    assert call[A.CATALOG_CLIENT_SOURCE] == "discovery_result"
