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
OUT = Path(tempfile.mkdtemp(prefix="mcp-health-example-"))
PLAN = iter(
    [
        ("export_report", {"path": str(OUT / "q3.txt"), "content": "Q3 numbers"}),
        ("export_report_broken", {"path": str(OUT / "q4.txt"), "content": "Q4 numbers"}),
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
