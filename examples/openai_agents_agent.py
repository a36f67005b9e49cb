"""An openai-agents agent (``Runner.run``) over ``MCPServerStdio``, judged zero-code: no LLM, no
key.

The model is an ``agents.Model`` that answers each turn with the next function call of its
plan, then a message. The run loop is the framework's own: it lists the demo server's tools (once:
the list is cached), offers them to the model every turn and calls the one it picked. The outcome
policy (``examples/outcomes.toml``) chooses each call's verifier.

    make example NAME=openai_agents_agent

needs ``openai-agents`` (``make example`` runs it in the project's ``framework_openai_agents``
nox venv).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from agents import Agent, Model, ModelResponse, Runner, Usage, set_tracing_disabled
from agents.mcp import MCPServerStdio
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

SERVER = {
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


class ScriptedModel(Model):
    """Answers each turn with the plan's next function call, then the message "done"."""

    def __init__(self) -> None:
        self.plan = iter(PLAN)

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        step = next(self.plan, None)
        if step is None:
            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            message = ResponseOutputMessage(
                id="msg", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)
        name, arguments = step
        print(f"agent: the model calls {name}")
        call = ResponseFunctionToolCall(
            type="function_call", name=name, arguments=json.dumps(arguments), call_id=name, id=name
        )
        return ModelResponse(output=[call], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError  # Runner.run only


async def main() -> None:
    set_tracing_disabled(True)  # the framework's own tracing would need an OpenAI key
    # cache_tools_list: list once, not at every turn. With the default, on a loaded machine the
    # next turn's tools/list can still be paging when a verified call's receipt arrives, and that
    # call then reads stale_catalog (catalog_cursor_remaining) although its catalog was complete.
    async with MCPServerStdio(SERVER, cache_tools_list=True) as server:
        agent = Agent(name="reports", model=ScriptedModel(), mcp_servers=[server])
        result = await Runner.run(agent, "export the quarterly reports and file a ticket")
    print(f"agent: {result.final_output}")


if __name__ == "__main__":
    asyncio.run(main())
