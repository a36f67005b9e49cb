"""A plain MCP agent on servers whose catalog changed since it was pinned (no telemetry code).

Run by ``test_approval_zero_code`` from the repository root as ``opentelemetry-instrument python
-m tests.integration.approval_agent SCENARIO MODE [URL ...]`` with
``OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG`` naming a pin file: every approval the test
reads comes from that file. ``MODE`` is the ``mcp.Client`` mode (``legacy``: ``initialize``;
``auto``: the 2026-07-28 era where the SDK supports it). Scenarios, as agents are configured:

* ``changes``: one session per server of :data:`approval_servers.CHANGES` (and one server no pin
  covers): list the tools, call the tools of :data:`CALLS`;
* ``per_call``: list in one session, then every call in a fresh session (LangChain's
  ``get_tools()``, llama-index's ``BasicMCPClient``);
* ``filter``: install a subset of the tools, as a framework's tool filter does (reported the way
  the framework hooks report it), then call;
* ``urls``: one session per streamable HTTP server URL given (two same-named servers);
* ``stdio NAME CHANGE ...``: one stdio server process per change, all announcing ``NAME``;
* ``rug_pull SCRIPT``: a server that adds a tool while the agent runs.

Prints one JSON line per call: what the application got (text, ``isError``, or the exception
class), so a test can show the application sees the same with and without pins.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp import Client
from tests.integration.approval_servers import ADDED_TOOL, CHANGES, build

ARGUMENTS: dict[str, dict[str, Any]] = {
    "trigger_change": {},
    "added_tool": {},
    "read_file": {"path": "workspace/notes.txt"},
    "create_ticket": {"title": "t"},
    "lookup": {"q": "w"},
    ADDED_TOOL: {},
}
CALLS: dict[str, tuple[str, ...]] = {
    "unchanged": ("read_file",),
    "description": ("read_file", "create_ticket"),
    "schema": ("read_file",),
    "title": ("read_file",),
    "added": (ADDED_TOOL, "create_ticket"),
    "removed": ("create_ticket",),
    "unpinned": ("read_file",),
}
#: The tools a tool filter keeps (``lookup`` is filtered out).
KEPT = ("read_file", "create_ticket")


async def _call(client: Client, server: str, tool: str) -> None:
    try:
        result = await client.call_tool(tool, ARGUMENTS[tool])
        got: Any = [[getattr(c, "text", None) for c in result.content], result.is_error]
    except Exception as exc:  # what the application sees is the point
        got = type(exc).__name__
    print(json.dumps({"server": server, "tool": tool, "got": got}), flush=True)


async def changes(mode: str) -> None:
    for change in (*CHANGES, "unpinned"):
        server = build("description", "approval-unpinned") if change == "unpinned" else None
        async with Client(server or build(change), mode=mode) as client:  # type: ignore[arg-type]
            await client.list_tools()
            for tool in CALLS[change]:
                await _call(client, change, tool)


async def per_call(mode: str) -> None:
    server = build("description")
    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        await client.list_tools()
    for tool in ("read_file", "create_ticket"):
        async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
            await _call(client, "description", tool)


async def filtered(mode: str) -> None:
    from otel_mcp_health import record_installed_tools  # what a framework's hook reports

    async with Client(build("description"), mode=mode) as client:  # type: ignore[arg-type]
        listed = await client.list_tools()
        record_installed_tools(client, [t for t in listed.tools if t.name in KEPT])
        for tool in KEPT:
            await _call(client, "description", tool)


async def urls(mode: str, *bases: str) -> None:
    for base in bases:
        async with Client(base + "/mcp", mode=mode) as client:  # type: ignore[arg-type]
            await client.list_tools()
            await _call(client, base, "read_file")


async def stdio(mode: str, name: str, *changed: str) -> None:
    """One stdio server process per change, each announcing the same ``name``."""
    from mcp import StdioServerParameters

    for change in changed:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "tests.integration.approval_servers", "stdio", change, name],
        )
        async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
            await client.list_tools()
            await _call(client, change, "read_file")


async def rug_pull(mode: str, server_script: str) -> None:
    """A server that adds a tool while the agent runs (``changing_server.py``): list, call, let
    it change, list again (after its ``list_changed``), call the new tool and an old one."""
    from mcp import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[server_script, "stdio"])
    async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
        await client.list_tools()
        await _call(client, "changing", "create_ticket")
        await _call(client, "changing", "trigger_change")
        await client.list_tools()
        await _call(client, "changing", "added_tool")
        await _call(client, "changing", "create_ticket")


SCENARIOS = {
    "rug_pull": rug_pull,
    "changes": changes,
    "per_call": per_call,
    "filter": filtered,
    "urls": urls,
    "stdio": stdio,
}

if __name__ == "__main__":
    anyio.run(SCENARIOS[sys.argv[1]], *sys.argv[2:])
