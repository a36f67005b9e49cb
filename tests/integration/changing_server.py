"""A server whose catalog really changes: the agent frameworks' ``list_changed`` scenario.

``python changing_server.py stdio`` serves one session over stdio; ``python changing_server.py
http`` serves streamable HTTP on 127.0.0.1 (its base URL on the first line of stdout; ``/mcp``,
and ``/authn`` answering 401 ``invalid_token``). Tools: ``create_ticket`` (works), ``fail``
(``isError``), ``trigger_change``, which adds ``added_tool`` to the catalog and announces it
with ``notifications/tools/list_changed``, and ``trigger_edit``, which changes ``create_ticket``'s
definition (its description, and an optional ``priority`` property) and announces that; it is
listed only when the server is started with ``edit`` after the transport
(``changing_server.py stdio edit``), so the other scenarios keep their three tools. A framework
that lists again after the signal but keeps offering its old tools runs on a stale catalog
(``digest_mismatch``). Run by the project's own interpreter (mcp 2.x), whatever SDK the client
cell has; one process per test.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp_health_servers import announce_tools_changed, serve_http

_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
_TICKET: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string"}},
    "required": ["title"],
}
TOOLS = [
    types.Tool(name="create_ticket", description="Creates a ticket.", input_schema=_TICKET),
    types.Tool(name="fail", description="Returns isError.", input_schema=_OBJECT),
    types.Tool(name="trigger_change", description="Adds a tool.", input_schema=_OBJECT),
]
ADDED = types.Tool(name="added_tool", description="Added by trigger_change.", input_schema=_OBJECT)
EDITED = types.Tool(
    name="create_ticket",
    description="Creates a ticket with a priority.",
    input_schema={
        "type": "object",
        "properties": {"title": {"type": "string"}, "priority": {"type": "string"}},
        "required": ["title"],
    },
)
EDIT = types.Tool(name="trigger_edit", description="Edits a tool.", input_schema=_OBJECT)


def build(*, edit: bool = False) -> Server[Any]:
    tools = [*TOOLS, EDIT] if edit else list(TOOLS)

    async def on_list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tools))

    async def on_call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        def text(value: str) -> list[types.ContentBlock]:
            return [types.TextContent(type="text", text=value)]

        if params.name == "fail":
            return types.CallToolResult(content=text("boom"), is_error=True)
        if params.name == "trigger_change":
            if ADDED not in tools:
                tools.append(ADDED)
            await announce_tools_changed(ctx)
            return types.CallToolResult(content=text("changed"))
        if params.name == "trigger_edit":
            tools[0] = EDITED
            await announce_tools_changed(ctx)
            return types.CallToolResult(content=text("edited"))
        return types.CallToolResult(content=text(f"{params.name} done"))

    server: Server[Any] = Server(
        "changing-server", version="0.1.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool
    )
    original = server.create_initialization_options

    def with_list_changed(options: NotificationOptions | None = None, *a: Any, **kw: Any) -> Any:
        return original(options or NotificationOptions(tools_changed=True), *a, **kw)

    server.create_initialization_options = with_list_changed  # type: ignore[method-assign]
    return server


async def _stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = build(edit="edit" in sys.argv[2:])
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def _http() -> None:
    async with serve_http(build(edit="edit" in sys.argv[2:])) as url:
        print(url, flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(_stdio if sys.argv[1:2] == ["stdio"] else _http)
