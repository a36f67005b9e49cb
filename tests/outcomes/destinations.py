"""Real destinations and an MCP server whose tools deliver to them (issue 5).

Three destinations, all local: a file in a temporary directory, a row in a sqlite database, and a
page published over HTTP to a small server on 127.0.0.1. For each, the MCP server has three tools:

* ``<kind>``: delivers, then says so;
* ``<kind>_broken``: says it delivered, but does not (→ ``false_success`` with a verifier);
* ``<kind>_slow``: delivers, then takes longer than the client waits (→ ``effect_unknown``);
* ``<kind>_stall``: takes longer than the client waits without delivering (→ ``effect_unknown``,
  which reconciliation then finds absent).

None of the tools is annotated read-only, so silence means a possible side effect.
"""

from __future__ import annotations

import hashlib
import http.server
import sqlite3
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

#: How long the slow variants keep the client waiting after delivering (the tests' client
#: timeout is far shorter; the server task is cancelled when the session closes).
SLOW_SECONDS = 30.0
KINDS = ("write_report", "insert_ticket", "publish_page")
_OBJECT: dict[str, Any] = {"type": "object"}


class PublishTarget:
    """A tiny HTTP service on 127.0.0.1: ``POST /pages/<slug>`` publishes, ``GET`` reads."""

    def __init__(self) -> None:
        self.pages: set[str] = set()
        target = self

        class Handler(http.server.BaseHTTPRequestHandler):
            """``POST /pages/<slug>`` publishes the path (201); ``GET`` answers 200 for a published
            path and 404 for any other."""

            def do_POST(self) -> None:
                target.pages.add(self.path)
                self.send_response(201)
                self.end_headers()

            def do_GET(self) -> None:
                self.send_response(200 if self.path in target.pages else 404)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @contextmanager
    def running(self) -> Iterator[PublishTarget]:
        self._thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()


def _write(arguments: dict[str, Any]) -> None:
    Path(arguments["path"]).write_text(arguments["content"], encoding="utf-8")


def _insert(arguments: dict[str, Any]) -> None:
    with sqlite3.connect(arguments["db"]) as connection:
        connection.execute("insert into tickets (id, version) values (?, 1)", (arguments["id"],))


def _publish(arguments: dict[str, Any]) -> None:
    url = f"{arguments['base']}/pages/{arguments['slug']}"
    urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=5).close()


_DELIVER = {"write_report": _write, "insert_ticket": _insert, "publish_page": _publish}


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build_destination_server() -> Server[Any]:
    """An MCP server with the twelve delivering / broken / slow / stalling tools."""
    tools = [
        types.Tool(name=f"{kind}{suffix}", description=f"{kind}{suffix}", input_schema=_OBJECT)
        for kind in KINDS
        for suffix in ("", "_broken", "_slow", "_stall")
    ]

    async def on_list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name, arguments = params.name, dict(params.arguments or {})
        kind, variant = name, "delivering"
        for suffix in ("_broken", "_slow", "_stall"):
            if name.endswith(suffix):
                kind, variant = name.removesuffix(suffix), suffix[1:]
        if variant in ("delivering", "slow"):
            await anyio.to_thread.run_sync(_DELIVER[kind], arguments)
        if variant in ("slow", "stall"):
            await anyio.sleep(SLOW_SECONDS)
        done = types.TextContent(type="text", text=f"{kind} done")
        return types.CallToolResult(content=[done], structured_content={"delivered": True})

    return Server(
        "destination-server",
        version="1.0.0",
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
