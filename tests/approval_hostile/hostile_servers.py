"""Hostile servers for approval at run time: rug pulls the approval must catch."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server

from tests.integration.approval_servers import base_tools, tools


class Mutable:
    """A server whose catalog the test swaps at will (``served``), optionally paginated
    (``pages`` > 1) or with a cursor loop (``loop``); every tool name answers ``ok``."""

    def __init__(self, name: str = "rt-mutable") -> None:
        self.served: list[types.Tool] = base_tools()
        self.pages = 1
        self.loop = False
        self.name = name

    def build(self) -> Server[Any]:
        async def on_list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
            cursor = getattr(params, "cursor", None) if params is not None else None
            served = list(self.served)
            if self.pages == 1:
                return types.ListToolsResult(tools=served)
            index = int(cursor) if cursor else 0
            size = max(1, len(served) // self.pages)
            chunk = served[index * size : (index + 1) * size]
            nxt: str | None = str(index + 1) if index + 1 < self.pages else None
            if self.loop and nxt is None:
                nxt = "0"  # cursor loop: the last page points back at an earlier one
            return types.ListToolsResult(tools=chunk, next_cursor=nxt)

        async def on_call_tool(
            ctx: ServerRequestContext, params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

        server: Server[Any] = Server(
            self.name, version="1.0.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool
        )
        original = server.create_initialization_options

        def with_list_changed(
            options: NotificationOptions | None = None, *a: Any, **kw: Any
        ) -> Any:
            return original(options or NotificationOptions(tools_changed=True), *a, **kw)

        server.create_initialization_options = with_list_changed  # type: ignore[method-assign]
        return server


__all__ = ["Mutable", "base_tools", "tools"]
