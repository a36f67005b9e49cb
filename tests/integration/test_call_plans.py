"""A call's plan (its call-time check and the head of its span, built once and looked up by every
later call of the same shape) never outlives what it was built from: each test changes one thing a
plan depends on between two calls of the same shape, through the real ``mcp`` client against a
real in-process server, and the second call must show the change."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from tests.approval_hostile.test_cache_escape import build as mismatching_server
from tests.integration.approval_servers import base_tools, tools, wire
from tests.integration.mcp_health_support import Captured
from tests.integration.test_approval_privacy import instrumented
from tests.integration.test_approval_zero_code import write_pins

from otel_mcp_health import attributes as A
from otel_mcp_health.core.offered import OfferedTool
from otel_mcp_health.core.pins import pin_server
from otel_mcp_health.instrumentation import _call_checks, _state, record_model_request

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:`LoggingHandler` in `opentelemetry-sdk`:DeprecationWarning"),
]

MISSING, OK, UNKNOWN = A.CONTRACT_MISSING_REQUIRED_ARGUMENT, A.CONTRACT_OK, A.CONTRACT_UNKNOWN_TOOL


def ticket(*, required: bool, read_only: bool) -> types.Tool:
    schema: dict[str, Any] = {"type": "object", "properties": {"title": {"type": "string"}}}
    if required:
        schema["required"] = ["title"]
    return types.Tool(
        name="create_ticket",
        description="Creates a ticket.",
        input_schema=schema,
        annotations=types.ToolAnnotations(read_only_hint=read_only),
    )


def serving(served: dict[str, Any], name: str = "plan-server") -> Server[Any]:
    """A server listing ``served["tools"]`` as they are when it is asked; every call succeeds."""

    async def on_list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(served["tools"]))

    async def on_call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    return Server(name, version="1.0.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def checks(captured: Captured) -> list[tuple[Any, ...]]:
    """Per ``create_ticket`` call, in order: contract, missing names, ``readOnlyHint``."""
    return [
        (a.get(A.CALL_CONTRACT), a.get(A.CALL_MISSING_ARGUMENTS), a.get(A.TOOL_READ_ONLY))
        for a in (dict(s.attributes or {}) for s in captured.named("tools/call create_ticket"))
    ]


async def test_a_new_discovery_and_other_argument_names_replan_the_call(
    captured: Captured,
) -> None:
    served: dict[str, Any] = {"tools": [ticket(required=True, read_only=True)]}
    async with Client(serving(served)) as client:
        await client.list_tools()
        await client.call_tool("create_ticket", {})
        await client.call_tool("create_ticket", {"title": "t"})  # other argument names
        await client.call_tool("create_ticket", {})
        served["tools"] = [ticket(required=False, read_only=False)]
        await client.list_tools()  # the tool changed: what its calls are checked against too
        await client.call_tool("create_ticket", {})
        served["tools"] = []
        await client.list_tools()  # the tool is gone
        await client.call_tool("create_ticket", {})
    assert checks(captured) == [
        (MISSING, ("title",), True),
        (OK, None, True),
        (MISSING, ("title",), True),
        (OK, None, False),
        (UNKNOWN, None, None),
    ]


async def test_a_hostile_calls_argument_names_are_checked_but_never_kept(
    captured: Captured,
) -> None:
    """Tool and argument names come from the model: a call whose names are too large to keep is
    checked afresh each time, and nothing of it is held by the session."""
    served: dict[str, Any] = {"tools": [ticket(required=True, read_only=True)]}
    hostile = {f"k{i}" + "x" * 1000: i for i in range(50)}
    async with Client(serving(served)) as client:
        await client.list_tools()
        await client.call_tool("create_ticket", hostile)
        await client.call_tool("create_ticket", hostile)
        await client.call_tool("create_ticket", {"title": "t"})
        gc.collect()  # the sessions of earlier tests, closed, leave the registry
        (state,) = (s for s in list(_state.SESSIONS.values()) if s.call_plans is not None)
        kept = state.call_plans.plans if state.call_plans is not None else {}
    assert checks(captured) == [
        (MISSING, ("title",), True),
        (MISSING, ("title",), True),
        (OK, None, True),
    ]
    assert list(kept) == [("create_ticket", ("title",))]
    assert sum(len(n) for _, names in kept for n in names) <= _call_checks.MAX_KEY_CHARS


async def test_a_session_without_a_discovery_follows_its_servers_latest(
    captured: Captured,
) -> None:
    served: dict[str, Any] = {"tools": [ticket(required=True, read_only=True)]}
    server = serving(served)
    async with Client(server) as first:
        await first.list_tools()
    async with Client(server) as reconnected:  # lists nothing: judged on its server's discovery
        await reconnected.call_tool("create_ticket", {})
        served["tools"] = [ticket(required=False, read_only=False)]
        async with Client(server) as other:
            await other.list_tools()  # the server's latest discovery, made in another session
        await reconnected.call_tool("create_ticket", {})
    assert checks(captured) == [(MISSING, ("title",), True), (OK, None, False)]


async def test_another_deadline_is_another_head(captured: Captured) -> None:
    served: dict[str, Any] = {"tools": [ticket(required=True, read_only=True)]}
    async with Client(serving(served)) as client:
        for timeout in (5, 5, 7, None):
            await client.call_tool("create_ticket", {"title": "t"}, read_timeout_seconds=timeout)
    spans = captured.named("tools/call create_ticket")
    deadlines = [(s.attributes or {}).get(A.CALL_DEADLINE_S) for s in spans]
    assert deadlines == [5.0, 5.0, 7.0, None]


async def test_an_agent_offering_the_tool_is_seen_by_the_next_call(captured: Captured) -> None:
    served: dict[str, Any] = {"tools": [ticket(required=True, read_only=True)]}
    async with Client(serving(served)) as client:
        listed = (await client.list_tools()).tools
        await client.call_tool("create_ticket", {"title": "t"})
        offered = [
            OfferedTool(t.name, t.description, json.loads(json.dumps(t.input_schema)))
            for t in listed
        ]
        record_model_request("openai.chat", offered)  # this context's agent offers the tool
        await client.call_tool("create_ticket", {"title": "t"})
    first, second = (dict(s.attributes or {}) for s in captured.named("tools/call create_ticket"))
    assert A.AGENT_LABEL not in first
    assert (second.get(A.AGENT_LABEL), second.get(A.AGENT_TIED)) == ("openai.chat/0", True)
    assert first[A.CALL_CONTRACT] == second[A.CALL_CONTRACT] == OK


async def test_an_approval_change_replans_the_call(tmp_path: Path) -> None:
    pins = write_pins(tmp_path, [pin_server(wire(base_tools()), name="rt-mutable")])
    state: dict[str, Any] = {"served": base_tools(), "lists": 0}
    with instrumented(pins) as t:
        async with Client(mismatching_server(state), mode="auto") as client:
            await client.list_tools()
            await client.call_tool("read_file", {"path": "x"})  # approved: planned so
            # the definition changes; the SDK re-lists it inside the next call (HEADER_MISMATCH)
            state["served"], state["mismatch"] = tools("description"), True
            await client.call_tool("read_file", {"path": "x"})
            await client.call_tool("read_file", {"path": "x"})
    calls = [
        dict(s.attributes or {})
        for s in t.pipeline.spans()
        if s.name == "tools/call read_file" and A.SESSION_KEY in (s.attributes or {})
    ]
    assert calls[0][A.CALL_APPROVAL] == "approved"
    assert calls[-1][A.CALL_APPROVAL] == "unapproved"
