"""A pydantic-ai agent over ``MCPToolset``, judged zero-code: no LLM, no key.

The model is pydantic-ai's own ``FunctionModel``, scripted: each request it calls the next tool
of its plan, then answers text. The agent runs for real: the toolset connects to the demo's MCP
server over stdio, lists the tools, hands them to the model at every step and calls the one the
model picked. The outcome policy (``examples/outcomes.toml``) chooses each call's verifier.

    make example NAME=pydantic_ai_agent

needs ``pydantic-ai-slim[mcp]`` (``make example`` runs it in the project's
``framework_pydantic_ai`` nox venv).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

SERVER = StdioTransport(
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


PLAN = iter(
    [
        ("export_report", report("q3.txt", "Q3 numbers")),
        ("export_report_broken", report("q4.txt", "Q4 numbers")),
        ("create_ticket", {"title": "printer on fire"}),
    ]
)


def scripted(messages: list[Any], info: Any) -> ModelResponse:
    """The next tool call of the plan, then the final answer."""
    step = next(PLAN, None)
    if step is None:
        return ModelResponse(parts=[TextPart("done")])
    name, arguments = step
    print(f"agent: the model is offered {len(info.function_tools)} tools and calls {name}")
    return ModelResponse(parts=[ToolCallPart(name, arguments, tool_call_id=f"call-{name}")])


async def main() -> None:
    agent = Agent(FunctionModel(scripted), toolsets=[MCPToolset(SERVER)])
    result = await agent.run("export the quarterly reports and file a ticket")
    print(f"agent: {result.output}")


if __name__ == "__main__":
    asyncio.run(main())
