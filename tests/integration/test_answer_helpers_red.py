"""The streaming helpers of the OpenAI and Anthropic SDKs while the answer tie wraps the stream
(issue 37 red team): each helper's result is the same with and without the instrumentation.

The real SDKs against the scripted LLM API, the real changing server (so the request maps to MCP
tools and an agent is recorded: the answer recorder is live), the real instrumentation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import openai
import pytest
from mcp import Client
from tests.support.matrix_drivers import CHANGING_SERVER, http_server
from tests.support.processor_helpers import instrumented_pipeline
from tests.support.scripted_model import ScriptedModel, scripted_model

from otel_mcp_health.instrumentation import _agents
from otel_mcp_health.instrumentation._answers import ANSWERS


@pytest.fixture
def server() -> Iterator[str]:
    with http_server(str(CHANGING_SERVER), "http", "edit") as url:
        yield url + "/mcp"


async def _listed(server: str) -> list[Any]:
    async with Client(server) as client:
        return list((await client.list_tools()).tools)


def _chat_tools(tools: list[Any]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description,
                                          "parameters": t.input_schema}}
        for t in tools
    ]  # fmt: skip


def _responses_tools(tools: list[Any]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "name": t.name, "description": t.description,
         "parameters": t.input_schema, "strict": False}
        for t in tools
    ]  # fmt: skip


def _anthropic_tools(tools: list[Any]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in tools
    ]


def _dump(value: Any) -> Any:
    if isinstance(value, list):
        return [_dump(v) for v in value]
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if dump else value


MESSAGES: Any = [{"role": "user", "content": "go"}]


def chat_helper(model: ScriptedModel, tools: list[Any]) -> Any:
    client = openai.OpenAI(base_url=model.base_url("h"), api_key="k", max_retries=0)
    with client.chat.completions.stream(
        model="m", messages=MESSAGES, tools=_chat_tools(tools)
    ) as s:
        events = [e.type for e in s]
        return events, _dump(s.get_final_completion())


def chat_streaming_response(model: ScriptedModel, tools: list[Any]) -> Any:
    client = openai.OpenAI(base_url=model.base_url("h"), api_key="k", max_retries=0)
    with client.chat.completions.with_streaming_response.create(
        model="m", messages=MESSAGES, tools=_chat_tools(tools), stream=True
    ) as response:
        return [_dump(chunk) for chunk in response.parse()]


def chat_raw_stream(model: ScriptedModel, tools: list[Any]) -> Any:
    client = openai.OpenAI(base_url=model.base_url("h"), api_key="k", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="m", messages=MESSAGES, tools=_chat_tools(tools), stream=True
    )
    return [_dump(chunk) for chunk in raw.parse()]


def responses_helper(model: ScriptedModel, tools: list[Any]) -> Any:
    client = openai.OpenAI(base_url=model.base_url("h"), api_key="k", max_retries=0)
    with client.responses.stream(model="m", input="go", tools=_responses_tools(tools)) as s:
        events = [e.type for e in s]
        return events, _dump(s.get_final_response())


def messages_helper(model: ScriptedModel, tools: list[Any]) -> Any:
    client = anthropic.Anthropic(
        base_url=model.base_url("h", anthropic=True), api_key="k", max_retries=0
    )
    with client.messages.stream(
        model="m", max_tokens=10, messages=MESSAGES, tools=_anthropic_tools(tools)
    ) as s:
        events = [e.type for e in s]
        return events, _dump(s.get_final_message())


def messages_text_stream(model: ScriptedModel, tools: list[Any]) -> Any:
    client = anthropic.Anthropic(
        base_url=model.base_url("h", anthropic=True), api_key="k", max_retries=0
    )
    with client.messages.stream(
        model="m", max_tokens=10, messages=MESSAGES, tools=_anthropic_tools(tools)
    ) as s:
        s.until_done()
        return _dump(s.get_final_message())


HELPERS: dict[str, Callable[[ScriptedModel, list[Any]], Any]] = {
    f.__name__: f
    for f in (
        chat_helper,
        chat_streaming_response,
        chat_raw_stream,
        responses_helper,
        messages_helper,
        messages_text_stream,
    )
}


@pytest.mark.anyio
@pytest.mark.parametrize("helper", sorted(HELPERS))
async def test_a_streaming_helper_reads_the_same_with_the_tie(server: str, helper: str) -> None:
    tools = await _listed(server)
    drive = HELPERS[helper]
    with scripted_model() as model:
        model.script("h", ("create_ticket", {"title": "t"}))
        bare = drive(model, tools)
    with instrumented_pipeline():
        await _listed(server)
        with scripted_model() as model:
            model.script("h", ("create_ticket", {"title": "t"}))
            seen = drive(model, tools)
            assert _agents.AGENT.get() is not None  # the request was an agent's
            pending = len(ANSWERS)
    assert json.dumps(seen, sort_keys=True, default=str) == json.dumps(
        bare, sort_keys=True, default=str
    )
    if helper not in ("chat_streaming_response", "chat_raw_stream"):
        assert pending == 1, pending  # the tie read the streamed call
