"""Hostile and broken MCP servers for the fault matrix, all on 127.0.0.1 or pipes.

* :func:`build_server`: a low-level ``Server`` whose catalog is chosen by ``catalog`` (normal,
  one huge page, a long or looping cursor chain, NaN, deep nesting, a 1 MB tool name) and whose
  tools echo, break their output schema, raise with a canary message, hang or crash.
* :func:`build_mcpserver`: the high-level ``MCPServer`` with a tool that raises and one with a
  5 MB result.
* ``python hostile.py stdio CATALOG``: that server over stdio (``mcpserver``: the high-level one).
* ``python hostile.py raw-stdio FAULT``: a scripted stdio peer that answers the handshake, then
  answers every later request with garbage, non-UTF-8 bytes or invalid JSON-RPC.
* :class:`RawHttp`: a scripted streamable-HTTP peer (asyncio, no framework) that answers the
  handshake, then cuts connections mid-response (JSON and SSE), sends garbage or non-UTF-8 bytes,
  or answers everything with 401/403/500/503 carrying canary headers.

Every text a hostile server controls carries a canary that the matrix searches for in every
exported byte and every log record.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from typing import Any, ClassVar

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

CANARY_ARG = "canary-fault-argument-5b1e"
CANARY_RESULT = "canary-fault-result-c2a9"
CANARY_TOKEN = "canary-fault-token-77d0"
CANARY_HEADER = "canary-fault-header-e41f"
CANARY_CURSOR = "canary-fault-cursor-3f8b"
CANARY_ERROR = "canary-fault-error-9a6c"
CANARY_DESCRIPTION = "canary-fault-description-0c5d"
CANARIES = (
    CANARY_ARG,
    CANARY_RESULT,
    CANARY_TOKEN,
    CANARY_HEADER,
    CANARY_CURSOR,
    CANARY_ERROR,
    CANARY_DESCRIPTION,
)
HUGE_NAME = "n" * 1_000_000
HUGE_PAGE_TOOLS = 3000
LONG_CHAIN_PAGES = 1100
_OBJECT: dict[str, Any] = {"type": "object"}
_COUNT: dict[str, Any] = {
    "type": "object",
    "properties": {"count": {"type": "integer"}},
    "required": ["count"],
}


def _tool(name: str, **extra: Any) -> types.Tool:
    return types.Tool(
        name=name,
        description=f"{name} {CANARY_DESCRIPTION}",
        input_schema=extra.pop("input_schema", _OBJECT),
        **extra,
    )


TOOLS = [
    _tool("echo"),
    _tool("bad_schema", output_schema=_COUNT),
    _tool("raise_error"),
    _tool("hang"),
    _tool("crash"),
]


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def _page(catalog: str, cursor: str | None) -> types.ListToolsResult:
    """One page of the chosen catalog; cursors carry the canary."""
    index = 0 if cursor is None else int(cursor.rsplit("-", 1)[1])
    if catalog == "huge_page":
        tools = [_tool(f"t{i}") for i in range(HUGE_PAGE_TOOLS)]
        return types.ListToolsResult(tools=[*TOOLS, *tools])
    if catalog in ("long_chain", "loop_chain"):
        tools = TOOLS if index == 0 else [_tool(f"p{index}")]
        following = index + 1
        if catalog == "loop_chain":
            following = 1 if index >= 2 else following  # 0 → 1 → 2 → 1 → 2 → ...
        elif following >= LONG_CHAIN_PAGES:
            return types.ListToolsResult(tools=tools)
        return types.ListToolsResult(tools=tools, next_cursor=f"{CANARY_CURSOR}-{following}")
    if catalog == "nan":
        odd = _tool("nan_tool", input_schema={"type": "object", "default": float("nan")})
        return types.ListToolsResult(tools=[*TOOLS, odd])
    if catalog == "deep":
        return types.ListToolsResult(tools=[*TOOLS, _tool("deep", input_schema=nested(2000))])
    if catalog == "huge_name":
        return types.ListToolsResult(tools=[*TOOLS, _tool(HUGE_NAME)])
    return types.ListToolsResult(tools=TOOLS)


def build_server(catalog: str = "normal") -> Server[Any]:
    async def on_list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return _page(catalog, params.cursor if params is not None else None)

    async def on_call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name, arguments = params.name, params.arguments or {}
        text = types.TextContent(type="text", text=f"{CANARY_RESULT} {arguments!r}")
        if name == "bad_schema":
            return types.CallToolResult(content=[text], structured_content={"count": CANARY_RESULT})
        if name == "raise_error":
            raise MCPError(code=types.INVALID_PARAMS, message=f"{CANARY_ERROR} {arguments!r}")
        if name == "hang":
            await anyio.sleep(3600)
        if name == "crash":
            os._exit(3)
        return types.CallToolResult(content=[text], structured_content={"echo": CANARY_RESULT})

    return Server(
        "hostile", version="6.6.6", on_list_tools=on_list_tools, on_call_tool=on_call_tool
    )


def build_mcpserver() -> Any:
    """The high-level ``MCPServer`` (FastMCP style): a tool that raises, one with a 5 MB result."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("hostile-high-level", instructions=f"use me {CANARY_DESCRIPTION}")

    @server.tool(description=f"Raises. {CANARY_DESCRIPTION}")
    def leak(secret: str) -> str:
        raise ValueError(f"{CANARY_ERROR} {secret}")

    @server.tool(description="A huge answer.")
    def huge(secret: str) -> str:
        return f"{CANARY_RESULT} {secret} " * 120_000

    return server


# ---- scripted peers ---------------------------------------------------------------------------
_PROTOCOL = "2025-11-25"


def _initialize_result(request_id: Any) -> bytes:
    result = {
        "protocolVersion": _PROTOCOL,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "raw", "version": "1"},
    }
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


def fault_body(fault: str, request_id: Any) -> bytes:
    """The body a scripted peer answers a request with after the handshake."""
    rid = json.dumps(request_id).encode()
    if fault == "garbage":
        return b"<<<not json " + CANARY_ERROR.encode() + b">>>"
    if fault == "nonutf8":
        return (
            b'{"jsonrpc":"2.0","id":'
            + rid
            + b',"result":{"content":[{"type":"text","text":"\xff\xfe '
            + CANARY_RESULT.encode()
            + b' \xc3\x28"}]}}'
        )
    if fault == "invalid_jsonrpc":
        return b'{"jsonrpc":"2.0","id":' + rid + b',"error":"' + CANARY_ERROR.encode() + b'"}'
    if fault == "schema":
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "result": {"content": CANARY_RESULT, "isError": 7},
        }
        return json.dumps(body).encode()
    raise ValueError(fault)


def raw_stdio(fault: str) -> None:
    """Answer the handshake properly, then every request with the fault's bytes."""
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        if message["method"] == "initialize":
            out.write(_initialize_result(message["id"]) + b"\n")
        else:
            out.write(fault_body(fault, message["id"]) + b"\n")
        out.flush()


class RawHttp:
    """A scripted streamable-HTTP peer on 127.0.0.1: ``/<fault>`` selects the behaviour."""

    STATUS: ClassVar[dict[str, int]] = {
        "http401": 401,
        "http403": 403,
        "http500": 500,
        "http503": 503,
    }

    def __init__(self) -> None:
        self.port = 0
        self._ready = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()
        self._ready.wait(10)

    def url(self, fault: str) -> str:
        return f"http://127.0.0.1:{self.port}/{fault}"

    def _serve(self) -> None:
        async def main() -> None:
            server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            async with server:
                await server.serve_forever()

        asyncio.run(main())

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        verb, path, _ = lines[0].split(" ", 2)
        headers = {k.lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:] if x)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        fault = path.strip("/")
        if fault in self.STATUS:
            challenge = f'Bearer error="invalid_token", error_description="{CANARY_HEADER}"'
            await self._send(
                writer,
                self.STATUS[fault],
                {"WWW-Authenticate": challenge, "X-Debug": CANARY_HEADER},
                f"denied {CANARY_ERROR}".encode(),
            )
            return True
        if verb != "POST":
            await self._send(writer, 405 if verb == "GET" else 200, {}, b"")
            return True
        message = json.loads(body)
        if "id" not in message:
            await self._send(writer, 202, {}, b"")
            return True
        session = {"mcp-session-id": "raw-session-1"}
        if message["method"] == "initialize":
            await self._send(writer, 200, session, _initialize_result(message["id"]))
            return True
        if fault == "cut_json":
            payload = json.dumps(
                {"jsonrpc": "2.0", "id": message["id"], "result": {"content": [CANARY_RESULT]}}
            ).encode()
            await self._send(
                writer, 200, session, payload[: len(payload) // 2], length=len(payload)
            )
            return False
        if fault == "cut_sse":
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"mcp-session-id: raw-session-1\r\n\r\n"
                b'event: message\ndata: {"jsonrpc":"2.0","id":'
                + json.dumps(message["id"]).encode()
                + b',"result":{"content":[{"type":"text","text":"'
                + CANARY_RESULT.encode()
            )
            await writer.drain()
            return False
        await self._send(writer, 200, session, fault_body(fault, message["id"]))
        return True

    @staticmethod
    async def _send(
        writer: asyncio.StreamWriter,
        status: int,
        headers: dict[str, str],
        body: bytes,
        length: int | None = None,
    ) -> None:
        lines = [f"HTTP/1.1 {status} X", "content-type: application/json"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        lines.append(f"content-length: {len(body) if length is None else length}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await writer.drain()


async def _stdio(catalog: str) -> None:
    from mcp.server.stdio import stdio_server

    if catalog == "mcpserver":
        await build_mcpserver().run_stdio_async()
        return
    server = build_server(catalog)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        anyio.run(_stdio, sys.argv[2])
    else:
        raw_stdio(sys.argv[2])
