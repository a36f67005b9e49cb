"""A plain ``mcp.ClientSession`` agent, judged zero-code: no framework, no LLM, no key.

Its "model" is a fixed plan of three tool calls against the demo's MCP server over stdio: an
export that writes its file, one that claims to and does not, and a ticket the tool refuses.
Nothing here mentions OpenTelemetry: ``opentelemetry-instrument`` loads the instrumentor, the
``mcp_health`` configurator puts the verdicts on the exported spans, and the outcome policy
(``examples/outcomes.toml``) chooses each call's verifier. Runs on mcp 1.x and 2.x.

    make example NAME=plain_session        # prints the verdicts the exported spans carry

or by hand (verdicts on the console exporter's spans, ``mcp_health.verdict``)::

    OTEL_PYTHON_CONFIGURATOR=mcp_health OTEL_SERVICE_NAME=example-agent \\
    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_LOGS_EXPORTER=none \\
    OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES=examples/outcomes.toml \\
    opentelemetry-instrument python examples/plain_session.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

#: The demo's MCP server over stdio (any MCP server works the same way). DEMO_SERVER_PYTHON names
#: an interpreter with mcp 2.x when this one has 1.x (the demo server is written for 2.x).
SERVER = StdioServerParameters(
    command=os.environ.get("DEMO_SERVER_PYTHON", sys.executable),
    args=["-m", "otel_mcp_health.demo._server", "--stdio"],
)
#: Reports go under the one literal directory that examples/outcomes.toml names (an argument
#: never chooses the directory, docs/outcomes.md#arguments-are-data), a sub-directory per run.
BASE = Path("/tmp/mcp-health-examples")  # noqa: S108 - the policy names this directory
BASE.mkdir(exist_ok=True)
OUT = Path(tempfile.mkdtemp(prefix="run-", dir=BASE))


def report(name: str, content: str) -> dict[str, str]:
    """export_report's arguments: the path, and the run and name the policy's template reads."""
    return {"path": str(OUT / name), "run": OUT.name, "name": name, "content": content}


#: The scripted model: which tool to call, with which arguments.
PLAN = [
    ("export_report", report("q3.txt", "Q3 numbers")),
    ("export_report_broken", report("q4.txt", "Q4 numbers")),
    ("create_ticket", {"title": "printer on fire"}),
]


async def list_every_page(session: ClientSession) -> list[str]:
    """Follow ``nextCursor`` to the last page, as an agent must to see every tool."""
    names: list[str] = []
    cursor = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        names += [tool.name for tool in page.tools]
        # mcp 2.x spells it next_cursor, 1.x nextCursor
        cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
        if cursor is None:
            return names


async def main() -> None:
    async with stdio_client(SERVER) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        print(f"agent: the server offers {len(await list_every_page(session))} tools")
        for name, arguments in PLAN:
            result = await session.call_tool(name, arguments)
            text = getattr(result.content[0], "text", "")
            print(f"agent: {name} answered {text!r}")


if __name__ == "__main__":
    asyncio.run(main())
