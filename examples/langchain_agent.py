"""A LangChain agent (langgraph's ReAct loop) over ``MultiServerMCPClient.get_tools()``, judged
zero-code: no LLM, no key.

``get_tools()`` is LangChain's documented default: the tools are listed in one session and every
call opens a fresh one; each call is judged against the server's discovery
(docs/frameworks.md). The chat model is scripted: each turn it asks for the next tool call of
its plan, then answers. The tools come from the demo's MCP server over stdio; the outcome policy
(``examples/outcomes.toml``) chooses each call's verifier.

    make example NAME=langchain_agent

needs ``langchain-mcp-adapters`` and ``langgraph`` (they pin ``mcp < 2``; ``make example`` runs it
in the project's ``mcp_latest_1x`` nox venv, and the demo server under ``DEMO_SERVER_PYTHON``).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langgraph.prebuilt import create_react_agent

# langgraph 1.x points to langchain's create_agent (the same loop, in the `langchain` package).
warnings.filterwarnings("ignore", message="create_react_agent has been moved")

SERVER = {
    "transport": "stdio",
    "command": os.environ.get("DEMO_SERVER_PYTHON", sys.executable),
    "args": ["-m", "otel_mcp_health.demo._server", "--stdio"],
}
#: Reports go under the one literal directory that examples/outcomes.toml names (an argument
#: never chooses the directory, docs/outcomes.md#arguments-are-data), a sub-directory per run.
BASE = Path("/tmp/mcp-health-examples")  # noqa: S108 - the policy names this directory
BASE.mkdir(exist_ok=True)
OUT = Path(tempfile.mkdtemp(prefix="run-", dir=BASE))


def report(name: str, content: str) -> dict[str, str]:
    """export_report's arguments: the path, and the run and name the policy's template reads."""
    return {"path": str(OUT / name), "run": OUT.name, "name": name, "content": content}


PLAN = [
    ("export_report", report("q3.txt", "Q3 numbers")),
    ("export_report_broken", report("q4.txt", "Q4 numbers")),
    ("create_ticket", {"title": "printer on fire"}),
]


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, accepting the tools the agent binds (its replies are fixed)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


async def main() -> None:
    tools = await MultiServerMCPClient({"demo": SERVER}).get_tools()
    print(f"agent: get_tools() handed the agent {len(tools)} tools")
    replies = [
        AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{i}"}])
        for i, (name, args) in enumerate(PLAN)
    ]
    model = ScriptedModel(messages=iter([*replies, AIMessage(content="done")]))
    result = await create_react_agent(model, tools).ainvoke({"messages": [("user", "go")]})
    for message in result["messages"]:
        if message.type == "tool":
            content = message.content
            blocks = content if isinstance(content, list) else [{"text": content}]
            print(f"agent: {message.name} answered {blocks[0].get('text')!r}")


if __name__ == "__main__":
    asyncio.run(main())
