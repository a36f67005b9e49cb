"""Partial-pin approval through the real client, the way agents and hand-edited files meet it:
mixed full and partial pins, hand-edited pins, fresh sessions, duplicates, zero tools, drift,
unreadable and unpinned files, pagination, the 2026-07-28 HEADER_MISMATCH re-list, check --pins
and pin --verify."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import HEADER_MISMATCH

from otel_mcp_health import attributes as A
from otel_mcp_health.core.pins import ToolPin, pin_server
from tests.approval_hostile.hostile_servers import Mutable
from tests.approval_hostile.test_runtime import discoveries, spans
from tests.integration.approval_servers import base_tools, tools, wire
from tests.integration.test_approval_privacy import instrumented
from tests.integration.test_approval_zero_code import write_pins

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:`LoggingHandler` in `opentelemetry-sdk`:DeprecationWarning"),
]


@pytest.fixture(params=["legacy", "auto"])
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def mixed(tmp: Path, keep: dict[str, tuple[str, ...] | None]) -> Path:
    """Full pins of base_tools, made partial per ``keep``: name -> members kept (no digest)."""
    full = pin_server(wire(base_tools()), name="rt-mutable")
    pins = []
    for p in full.tools:
        if p.name in keep and keep[p.name] is not None:
            members = {m: p.members[m] for m in keep[p.name] or ()}
            pins.append(ToolPin(p.name, None, members))
        else:
            pins.append(p)
    return write_pins(tmp, [dataclasses.replace(full, tools=tuple(pins))])


def calls(t: Any) -> dict[str, dict[str, Any]]:
    return {a[A.GEN_AI_TOOL_NAME]: a for a in spans(t, "tools/call")}


async def test_mixed(tmp_path: Path, era: str) -> None:
    pins = mixed(
        tmp_path,
        {"lookup": ("name", "description"), "create_ticket": ("description", "inputSchema")},
    )
    server = Mutable()
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            await client.list_tools()
            for name in ("read_file", "lookup", "create_ticket"):
                await client.call_tool(name, {"path": "a", "q": "b", "title": "t"})
    [d] = discoveries(t)
    assert d[A.CATALOG_APPROVAL] == "approved"
    assert list(d[A.CATALOG_APPROVAL_UNCOMPARED_MEMBERS]) == [
        "annotations",
        "execution",
        "inputSchema",
        "outputSchema",
    ]
    c = calls(t)
    assert A.CALL_APPROVAL_PARTIAL not in c["read_file"]
    assert c["lookup"][A.CALL_APPROVAL_PARTIAL] is True
    assert c["create_ticket"][A.CALL_APPROVAL_PARTIAL] is True


async def test_all_members_no_digest_is_full(tmp_path: Path, era: str) -> None:
    from otel_mcp_health.core.digest import PROJECTED_MEMBERS

    pins = mixed(tmp_path, {"lookup": PROJECTED_MEMBERS})
    with instrumented(pins) as t:
        async with Client(Mutable().build(), mode=era) as client:
            await client.list_tools()
            await client.call_tool("lookup", {"q": "b"})
    [d] = discoveries(t)
    assert A.CATALOG_APPROVAL_UNCOMPARED_MEMBERS not in d
    assert A.CALL_APPROVAL_PARTIAL not in calls(t)["lookup"]


async def test_fresh_session_inherits_partial(tmp_path: Path, era: str) -> None:
    pins = mixed(tmp_path, {"lookup": ("description",)})
    built = Mutable().build()
    with instrumented(pins) as t:
        async with Client(built, mode=era) as client:
            await client.list_tools()
        async with Client(built, mode=era) as client:
            await client.call_tool("lookup", {"q": "b"})
    c = calls(t)["lookup"]
    assert c[A.CALL_APPROVAL] == "approved"
    assert c[A.CALL_APPROVAL_PARTIAL] is True


async def test_listed_twice(tmp_path: Path, era: str) -> None:
    pins = mixed(tmp_path, {"lookup": ("name", "description")})
    server = Mutable()
    twin = base_tools()[2].model_copy(
        update={"input_schema": {"type": "object", "properties": {"q": {}, "exfil": {}}}}
    )
    server.served = [*base_tools(), twin]
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            await client.list_tools()
            await client.call_tool("lookup", {"q": "b"})
    [d] = discoveries(t)
    assert d[A.CATALOG_APPROVAL] == "approved"
    assert calls(t)["lookup"][A.CALL_APPROVAL_PARTIAL] is True


async def test_zero_tools(tmp_path: Path, era: str) -> None:
    pins = mixed(tmp_path, {"lookup": ("description",)})
    server = Mutable()
    server.served = []
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            await client.list_tools()
            await client.call_tool("lookup", {"q": "b"})
    [d] = discoveries(t)
    assert A.CATALOG_APPROVAL_UNCOMPARED_MEMBERS not in d
    assert A.CALL_APPROVAL_PARTIAL not in calls(t)["lookup"]


async def test_drifted_and_partial(tmp_path: Path, era: str) -> None:
    pins = mixed(tmp_path, {"read_file": ("name", "description"), "lookup": ("description",)})
    server = Mutable()
    server.served = tools("description")
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            await client.list_tools()
            await client.call_tool("read_file", {"path": "b"})
            await client.call_tool("lookup", {"q": "b"})
    [d] = discoveries(t)
    assert d[A.CATALOG_APPROVAL] == "drifted"
    assert A.CATALOG_APPROVAL_UNCOMPARED_MEMBERS in d
    c = calls(t)
    assert c["read_file"][A.CALL_APPROVAL] == "unapproved"
    assert A.CALL_APPROVAL_PARTIAL not in c["read_file"]
    assert c["lookup"][A.CALL_APPROVAL_PARTIAL] is True


async def test_unreadable(tmp_path: Path, era: str) -> None:
    pins = tmp_path / "bad.toml"
    pins.write_text("not toml [[[")
    with pytest.warns(UserWarning, match="unreadable"), instrumented(pins) as t:  # noqa: PT031
        async with Client(Mutable().build(), mode=era) as client:
            await client.list_tools()
            await client.call_tool("lookup", {"q": "b"})
    [d] = discoveries(t)
    assert A.CATALOG_APPROVAL_UNCOMPARED_MEMBERS not in d
    assert A.CALL_APPROVAL_PARTIAL not in calls(t)["lookup"]


async def test_unpinned(tmp_path: Path, era: str) -> None:
    pins = mixed(tmp_path, {"lookup": ("description",)})
    with instrumented(pins) as t:
        async with Client(Mutable("other").build(), mode=era) as client:
            await client.list_tools()
            await client.call_tool("lookup", {"q": "b"})
    [d] = discoveries(t)
    assert d[A.CATALOG_APPROVAL] == "unpinned"
    assert A.CATALOG_APPROVAL_UNCOMPARED_MEMBERS not in d
    assert A.CALL_APPROVAL_PARTIAL not in calls(t)["lookup"]


async def test_description_pinned_absent(tmp_path: Path, era: str) -> None:
    nodesc = types.Tool(name="lookup", input_schema={"type": "object"})
    full = pin_server(wire([nodesc]), name="rt-mutable")
    p = full.tools[0]
    assert p.members["description"] == "absent"
    pins = write_pins(
        tmp_path,
        [dataclasses.replace(full, tools=(ToolPin("lookup", None, {"description": "absent"}),))],
    )
    server = Mutable()
    server.served = [nodesc]
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            await client.list_tools()
            await client.call_tool("lookup", {"q": "b"})
            server.served = [nodesc.model_copy(update={"description": "now described"})]
            await client.list_tools()
            await client.call_tool("lookup", {"q": "b"})
    d = discoveries(t)
    assert d[0][A.CATALOG_APPROVAL] == "approved"
    assert list(d[0][A.CATALOG_APPROVAL_UNCOMPARED_MEMBERS]) == [
        "annotations",
        "execution",
        "inputSchema",
        "outputSchema",
    ]
    assert d[1][A.CATALOG_APPROVAL] == "drifted"
    cs = spans(t, "tools/call")
    assert cs[0][A.CALL_APPROVAL_PARTIAL] is True
    assert cs[1][A.CALL_APPROVAL] == "unapproved"


def mismatch_server(state: dict[str, Any]) -> Server[Any]:
    async def on_list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        state["lists"] += 1
        return types.ListToolsResult(tools=list(state["served"]), ttl_ms=600_000)

    async def on_call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if state.pop("mismatch", False):
            raise MCPError(HEADER_MISMATCH, "header mismatch")
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    return Server(
        "rt-mutable", version="1.0.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool
    )


async def test_header_mismatch_relist(tmp_path: Path) -> None:
    """Discovery: only read_file (full pin). Re-list adds lookup (partial) and an added tool."""
    pins = mixed(tmp_path, {"lookup": ("name", "description")})
    state: dict[str, Any] = {"served": [base_tools()[0]], "lists": 0}
    with instrumented(pins) as t:
        async with Client(mismatch_server(state), mode="auto") as client:
            await client.list_tools()
            state["served"], state["mismatch"] = tools("added"), True
            await client.call_tool("read_file", {"path": "x"})
            await client.list_tools()
            await client.call_tool("lookup", {"q": "x"})
            await client.call_tool("upload_keys", {})
    c = calls(t)
    assert c["upload_keys"][A.CALL_APPROVAL] == "unapproved"
    assert (
        c["lookup"].get(A.CALL_APPROVAL) != "approved"
        or c["lookup"].get(A.CALL_APPROVAL_PARTIAL) is True
    )


async def test_header_mismatch_schema_change(tmp_path: Path) -> None:
    pins = mixed(tmp_path, {"read_file": ("name", "description")})
    state: dict[str, Any] = {"served": base_tools(), "lists": 0}
    with instrumented(pins) as t:
        async with Client(mismatch_server(state), mode="auto") as client:
            await client.list_tools()
            state["served"], state["mismatch"] = tools("schema"), True
            await client.call_tool("read_file", {"path": "x"})
            await client.list_tools()
            await client.call_tool("read_file", {"path": "x"})
    cs = spans(t, "tools/call")
    assert all(a[A.CALL_APPROVAL_PARTIAL] is True for a in cs)


def test_check_drifted_partial_text_and_json(tmp_path: Path) -> None:
    import json
    import sys

    from tests.check.check_support import check

    full = pin_server(wire(base_tools()), name="rt-x")
    partial = tuple(
        ToolPin(p.name, None, {"description": p.members["description"]})
        if p.name == "lookup"
        else p
        for p in full.tools
    )
    pins = write_pins(tmp_path, [dataclasses.replace(full, tools=partial)])
    cmd = [
        "--",
        sys.executable,
        "-m",
        "tests.integration.approval_servers",
        "stdio",
        "description",
        "rt-x",
    ]
    text = check("--pins", str(pins), *cmd)
    rep = check("--json", "--pins", str(pins), "--call", "lookup", "--args", '{"q":"b"}', *cmd)
    unread = tmp_path / "bad.toml"
    unread.write_text("[[[")
    rep2 = check("--json", "--pins", str(unread), "--call", "lookup", "--args", '{"q":"b"}', *cmd)
    from tests.pin.pin_support import pin

    src = tmp_path / "t.json"
    src.write_text(json.dumps({"result": {"tools": wire(tools("description"))}}))
    v = pin("--pins", pins, "--verify", "--name", "rt-x", "--tools-file", src)
    uncompared = ["annotations", "execution", "inputSchema", "outputSchema"]
    assert text.code == 1
    assert "approval  drifted (material_change)" in text.out
    assert f"not compared for some tools (partial pins): {' '.join(uncompared)}" in text.out
    approval = rep.json()["catalog"]["approval"]
    assert (approval["verdict"], approval["uncomparedMembers"]) == ("drifted", uncompared)
    assert (rep.json()["call"]["approval"], rep.json()["call"]["approvalPartial"]) == (
        "approved",
        True,
    )
    assert rep2.json()["catalog"]["approval"]["uncomparedMembers"] == []
    assert rep2.json()["call"]["approvalPartial"] is False
    assert v.code == 1
    assert f"partial pins: {', '.join(uncompared)} not compared" in v.out


async def test_paginated_partial(tmp_path: Path, era: str) -> None:
    pins = mixed(tmp_path, {"lookup": ("description",)})
    server = Mutable()
    server.pages = 3
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            cursor = None
            for _ in range(2):
                while True:
                    page = (
                        await client.list_tools(cursor=cursor)
                        if cursor
                        else await client.list_tools()
                    )
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                server.served = tools("schema")
            await client.call_tool("lookup", {"q": "b"})
            await client.call_tool("read_file", {"path": "b"})
    d = discoveries(t)
    assert len(d) == 2
    assert all(list(x[A.CATALOG_APPROVAL_UNCOMPARED_MEMBERS]) for x in d)
    c = calls(t)
    assert c["lookup"][A.CALL_APPROVAL_PARTIAL] is True
    assert c["read_file"][A.CALL_APPROVAL] == "unapproved"
