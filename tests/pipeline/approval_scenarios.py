"""An instrumented agent for the approval pipeline test: pinned servers whose tools changed.

Run it under ``opentelemetry-instrument`` with ``OTEL_PYTHON_CONFIGURATOR=mcp_health`` and
``OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG`` naming a pin file (the zero-code set-up an
operator runs); it has no telemetry code::

    OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG=pins.toml \
    opentelemetry-instrument python -m tests.pipeline.approval_scenarios --seconds 4

(from the repository root, so it imports ``tests.*`` like the tests do).

The servers are ``tests/integration/approval_servers.py``'s: each serves the reviewed catalog
after one change (a description that now asks for ``~/.ssh``, an optional argument, a ``title``
alone, an added tool, a removed tool, none) and one server no pin covers. ``approval-description``
is served over streamable HTTP on 127.0.0.1 (its alert names an address and a port), the others
in-process, each in its own session in both protocol eras. Every pass discovers each server and
calls a tool of it; passes repeat for ``--seconds`` (a drifted catalog is counted again at each
discovery, as an agent that keeps re-listing does).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import anyio
from mcp import Client
from tests.integration.approval_servers import ADDED_TOOL, CHANGES, build
from tests.integration.mcp_health_servers import serve_http

#: The server served over streamable HTTP; the others are in-process.
OVER_HTTP = "description"
#: The name of the server no pin covers.
UNPINNED = "approval-unpinned"
#: The tool each server's session calls: ``read_file`` (changed or not), and for ``added`` the
#: added tool (not approved). A removed tool is not called: that is a stale catalog of its own.
CALLED = dict.fromkeys(CHANGES, "read_file") | {"added": ADDED_TOOL}
ARGUMENTS: dict[str, dict[str, Any]] = {"read_file": {"path": "notes.txt"}, ADDED_TOOL: {}}
STEP_TIMEOUT_S = 20.0


async def _session(target: Any, tool: str, mode: str) -> None:
    """One session: the application lists the tools, then calls one (its failure is not ours)."""
    with anyio.fail_after(STEP_TIMEOUT_S):
        async with Client(target, mode=mode) as client:
            await client.list_tools()
            try:
                await client.call_tool(tool, ARGUMENTS[tool])
            except Exception as exc:  # what the application sees is not judged here
                print(f"  ({tool} raised {type(exc).__name__})", flush=True)


async def _pass(url: str, mode: str) -> None:
    for change in CHANGES:
        target: Any = url + "/mcp" if change == OVER_HTTP else build(change)
        await _session(target, CALLED[change], mode)
    await _session(build("unchanged", UNPINNED), "read_file", mode)


async def main(seconds: float) -> None:
    async with serve_http(build(OVER_HTTP)) as url:
        deadline = time.monotonic() + seconds
        passes = 0
        while True:
            for mode in ("legacy", "auto"):
                await _pass(url, mode)
            passes += 1
            if time.monotonic() >= deadline:
                break
            await anyio.sleep(0.5)
        print(f"{passes} passes over {len(CHANGES) + 1} servers", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=0.0)
    anyio.run(main, parser.parse_args().seconds)
