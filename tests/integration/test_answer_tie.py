"""The tie through the model's answer (docs/model.md#agents): the model asked in one task, the
tool run in another, as LangGraph's nodes and llama-index's workflow steps do.

The real OpenAI and Anthropic SDKs against the scripted LLM API on 127.0.0.1, the real changing
server over streamable HTTP, a fresh ``mcp.Client`` session per call, the real instrumentation
and span processor. No call here runs in the context of its model request (each turn is its own
task), so without the answer every call would be untied and judged against every agent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import mcp_types as types
import openai
import pytest
from mcp import Client
from tests.support.matrix_drivers import CHANGING_SERVER, http_server
from tests.support.processor_helpers import Pipeline, instrumented_pipeline
from tests.support.scripted_model import ScriptedModel, scripted_model

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio


@pytest.fixture
def verdicts() -> Iterator[Pipeline]:
    with instrumented_pipeline() as pipeline:
        yield pipeline


@pytest.fixture
def server() -> Iterator[str]:
    with http_server(str(CHANGING_SERVER), "http", "edit") as url:
        yield url + "/mcp"


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with scripted_model() as scripted:
        yield scripted


async def listed(server: str) -> list[types.Tool]:
    async with Client(server) as client:
        return list((await client.list_tools()).tools)


def as_openai(tools: list[types.Tool]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description,
                                          "parameters": t.input_schema}}
        for t in tools
    ]  # fmt: skip


def as_anthropic(tools: list[types.Tool]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in tools
    ]


async def openai_turn(
    model: ScriptedModel, agent: str, tools: list[types.Tool], *, stream: bool = False
) -> tuple[str, dict[str, Any]]:
    """One model turn of ``agent`` (its own task): the tool call the model answered with. The
    client is closed in the test's own event loop."""
    async with openai.AsyncOpenAI(base_url=model.base_url(agent), api_key="k") as client:
        return await _openai_turn(client, tools, stream=stream)


async def _openai_turn(
    client: openai.AsyncOpenAI, tools: list[types.Tool], *, stream: bool
) -> tuple[str, dict[str, Any]]:
    messages: Any = [{"role": "user", "content": "go"}]
    if not stream:
        answer = await client.chat.completions.create(
            model="m", messages=messages, tools=as_openai(tools)
        )
        call = answer.choices[0].message.tool_calls[0].function  # type: ignore[index, union-attr]
        return call.name, json.loads(call.arguments)
    chunks = await client.chat.completions.create(
        model="m", messages=messages, tools=as_openai(tools), stream=True
    )
    name, arguments = "", ""
    async for chunk in chunks:
        for delta in chunk.choices[0].delta.tool_calls or ():
            name = delta.function.name or name  # type: ignore[union-attr]
            arguments += delta.function.arguments or ""  # type: ignore[union-attr]
    return name, json.loads(arguments)


async def anthropic_turn(
    model: ScriptedModel, agent: str, tools: list[types.Tool]
) -> tuple[str, dict[str, Any]]:
    url = model.base_url(agent, anthropic=True)
    async with anthropic.AsyncAnthropic(base_url=url, api_key="k") as client:
        answer = await client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "go"}],
            tools=as_anthropic(tools),  # type: ignore[arg-type]
        )  # fmt: skip
    block = answer.content[0]
    assert block.type == "tool_use"
    return block.name, dict(block.input)  # type: ignore[arg-type]


async def tool_turn(server: str, call: tuple[str, dict[str, Any]]) -> None:
    """The tool the model asked for, run in a fresh session, in a task of its own."""
    async with Client(server) as client:
        await client.call_tool(*call)


async def in_task(coroutine: Any) -> Any:
    return await asyncio.create_task(coroutine)


async def edit(server: str) -> list[types.Tool]:
    await tool_turn(server, ("trigger_edit", {}))
    return await listed(server)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_rebuilt_agent_is_judged_on_its_own_offer_not_the_earlier_agents(
    verdicts: Pipeline, server: str, model: ScriptedModel, stream: bool
) -> None:
    old = await listed(server)
    model.script("one", ("create_ticket", {"title": "one"}))
    first = await in_task(openai_turn(model, "one", old, stream=stream))
    await in_task(tool_turn(server, first))
    new = await edit(server)
    model.script("two", ("create_ticket", {"title": "two"}))
    second = await in_task(openai_turn(model, "two", new, stream=stream))
    await in_task(tool_turn(server, second))
    rows = [dict(s.attributes or {}) for s in verdicts.named("tools/call create_ticket")]
    assert [(r.get(A.CATALOG_VERDICT), r.get(A.AGENT_TIED)) for r in rows] == [
        ("converged", True),  # the first agent, on the catalog of its time
        ("converged", True),  # the rebuilt agent, on the new one: not the first agent's offer
    ]
    assert rows[0][A.AGENT_LABEL] != rows[1][A.AGENT_LABEL]
    assert {r[A.CATALOG_CLIENT_SOURCE] for r in rows} == {"model_request"}


async def test_two_agents_interleaved_each_claim_their_own_answer(
    verdicts: Pipeline, server: str, model: ScriptedModel
) -> None:
    old = await listed(server)
    model.script("stale", ("create_ticket", {"title": "stale"}))
    stale_ask = asyncio.create_task(anthropic_turn(model, "stale", old))
    stale_call = await stale_ask
    new = await edit(server)
    model.script("fresh", ("create_ticket", {"title": "fresh"}))
    fresh_call = await in_task(openai_turn(model, "fresh", new))
    # the tools run after both answers, in the other order
    await in_task(tool_turn(server, fresh_call))
    await in_task(tool_turn(server, stale_call))
    rows = [dict(s.attributes or {}) for s in verdicts.named("tools/call create_ticket")]
    by_label = {
        r[A.AGENT_LABEL]: (r[A.CATALOG_VERDICT], r[A.REASON], r[A.AGENT_TIED]) for r in rows
    }
    assert by_label == {
        "openai.chat/0": ("converged", "no_outcome_verifier", True),
        "anthropic.messages/0": ("stale", "catalog_earlier_catalog_offered", True),
    }


async def test_a_raw_response_is_read_when_the_application_parses_it(
    verdicts: Pipeline, server: str, model: ScriptedModel
) -> None:
    """``with_raw_response`` (what LangChain's ``ChatOpenAI`` calls): the answer is read from
    what ``parse()`` gives, so its tool call is tied like any other."""

    async def raw_turn(agent: str, tools: list[types.Tool]) -> tuple[str, dict[str, Any]]:
        async with openai.AsyncOpenAI(base_url=model.base_url(agent), api_key="k") as client:
            raw = await client.chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": "go"}], tools=as_openai(tools)
            )
        call = raw.parse().choices[0].message.tool_calls[0].function  # type: ignore[index, union-attr]
        return call.name, json.loads(call.arguments)

    old = await listed(server)
    model.script("one", ("create_ticket", {"title": "one"}))
    first = await in_task(raw_turn("one", old))
    new = await edit(server)
    model.script("two", ("create_ticket", {"title": "two"}))
    second = await in_task(raw_turn("two", new))
    await in_task(tool_turn(server, second))
    await in_task(tool_turn(server, first))
    rows = [dict(s.attributes or {}) for s in verdicts.named("tools/call create_ticket")]
    assert [(r[A.CATALOG_VERDICT], r[A.REASON], r[A.AGENT_TIED]) for r in rows] == [
        ("converged", "no_outcome_verifier", True),
        ("stale", "catalog_earlier_catalog_offered", True),
    ]


async def test_a_call_nobody_asked_for_stays_untied(
    verdicts: Pipeline, server: str, model: ScriptedModel
) -> None:
    old = await listed(server)
    model.script("a", ("create_ticket", {"title": "asked"}))
    asked = await in_task(openai_turn(model, "a", old))
    await in_task(tool_turn(server, asked))  # claims the one answer
    await in_task(tool_turn(server, ("create_ticket", {"title": "unasked"})))
    rows = [dict(s.attributes or {}) for s in verdicts.named("tools/call create_ticket")]
    assert [r.get(A.AGENT_TIED) for r in rows] == [True, False]
