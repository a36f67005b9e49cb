"""A plain MCP agent: no OpenTelemetry code, no import of otel_mcp_health, no verifier.

Run by ``test_zero_code_policy`` as ``opentelemetry-instrument python -m
tests.outcomes.zero_code_agent WORKDIR`` from the repository root
with ``OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES`` naming a policy: every outcome verdict the test
reads comes from that file. Two real servers, in-process: the destination server of this suite
(``write_report`` writes the file it promises, ``write_report_broken`` claims to and does not) and
the integration suite's server (``lookup`` is annotated read-only, ``create_ticket`` is listed by
no policy entry). The arguments carry a canary that must never leave the process.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import Client
from tests.integration.mcp_health_servers import CANARY_ARG, build_server
from tests.outcomes.destinations import build_destination_server


def _report(workdir: Path, kind: str) -> dict[str, str]:
    """The file to write: its path (for the tool) and its name in ``workdir`` (for the policy)."""
    name = f"{kind}-{CANARY_ARG}.txt"
    return {"path": str(workdir / name), "name": name, "content": CANARY_ARG}


async def main(workdir: Path) -> None:
    async with Client(build_destination_server(), mode="legacy") as client:
        await client.list_tools()
        await client.call_tool("write_report", _report(workdir, "honest"))
        await client.call_tool("write_report_broken", _report(workdir, "broken"))
    async with Client(build_server(), mode="legacy") as client:
        first = await client.list_tools()
        await client.list_tools(cursor=first.next_cursor)
        await client.call_tool("lookup", {"q": CANARY_ARG})
        await client.call_tool("create_ticket", {"title": CANARY_ARG, "priority": "p"})
    print("agent: done", flush=True)


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]))
