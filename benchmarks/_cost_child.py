"""One measured process of the cost gate (``cost_gate.py``), run under callgrind.

``python _cost_child.py MODE COUNT [KIND]`` does one warm-up, then MODE's unit of work COUNT
times, and nothing else: the gate runs it with two counts and divides the difference in
instructions by the difference in counts (start-up, imports and the warm-up cancel out). ``KIND``
is a set-up of ``_peers/child.py``: ``ours`` (the default) or ``baseline`` (a TracerProvider and
no instrumentation of ours), for the modes that run sessions. Modes:

* ``call``: an in-process ``tools/call`` of ``lookup`` (the instrumentation with the span
  processor in front of an exporter that does nothing: ``_peers/child.py``'s ``ours``), on the
  ``mcp`` line of this interpreter (1.x or 2.x);
* ``list``: an in-process ``tools/list`` page (five tools), the same set-up;
* ``traversal``: a ``tools/list`` traversal of :data:`PAGES` one-tool pages in process (the bench
  server's paged catalog, followed by ``nextCursor``), after a warm one in the same session
  (``mcp`` 2.x);
* ``sessions``: COUNT in-process sessions at once, each listing the tools and making
  :data:`SESSION_CALLS` calls, after one such session alone;
* ``digest``: a cold digest of the typical catalog (``_catalogs.make_typical_catalog``, 1,000
  tools, as parsed JSON): a fresh ``CatalogDigester`` each time;
* ``rfc8785``: the reference recipe on the same catalog (project, sort, ``rfc8785.dumps``,
  SHA-256), for the ratio only.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "_peers")]
WARMUP = 20
PAGES = 1000
SESSION_CALLS = 3


def _digest(reference: bool) -> Callable[[], object]:
    from _catalogs import make_typical_catalog
    from otel_mcp_health.core.digest import CatalogDigester, project_tool

    catalog = json.loads(json.dumps(make_typical_catalog()))
    if not reference:
        return lambda: CatalogDigester().digest(catalog)
    import rfc8785

    def recipe() -> str:
        tools = sorted((project_tool(tool) for tool in catalog), key=lambda tool: tool["name"])
        return "sha256:" + hashlib.sha256(rfc8785.dumps(tools)).hexdigest()

    return recipe


async def _traverse(client: Any) -> None:
    """List every page, following ``nextCursor`` as an application does."""
    cursor: str | None = None
    pages = 0
    while True:
        result = await client.list_tools(cursor=cursor)
        pages += 1
        cursor = result.next_cursor
        if cursor is None:
            break
    if pages != PAGES:
        raise SystemExit(f"the traversal had {pages} pages, expected {PAGES}")


async def _traversals(count: int) -> None:
    from mcp import Client

    from _server import build_server

    async with Client(build_server(PAGES), mode="legacy") as client:
        for _ in range(1 + count):
            await _traverse(client)


async def _sessions(count: int) -> None:
    import anyio
    import child

    async def one() -> None:
        async with child._clients("")["in-process"]() as client:
            await client.list_tools()
            for _ in range(SESSION_CALLS):
                await client.call_tool("lookup", child.ARGUMENTS)

    await one()
    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(one)


async def _session(mode: str, count: int, kind: str) -> None:
    import child

    child._setup(kind, child._NoOpExporter())
    if mode == "traversal":
        await _traversals(count)
        return
    if mode == "sessions":
        await _sessions(count)
        return
    async with child._clients("")["in-process"]() as client:
        await client.list_tools()
        for _ in range(WARMUP + count):
            if mode == "call":
                await client.call_tool("lookup", child.ARGUMENTS)
            else:
                await client.list_tools()


def main() -> int:
    mode, count = sys.argv[1], int(sys.argv[2])
    if mode in ("digest", "rfc8785"):
        one = _digest(reference=mode == "rfc8785")
        one()
        for _ in range(count):
            one()
        return 0
    import anyio

    anyio.run(_session, mode, count, sys.argv[3] if len(sys.argv) > 3 else "ours")
    return 0


if __name__ == "__main__":
    sys.exit(main())
