"""A model answer naming a tool with a hostile name (issue 37 red team): what the tie keeps and
what a ``tools/call`` pays for it stay bounded.

The answer is read by the real OpenAI SDK hook (``answered``, what ``SyncAPIClient.request``'s
hook calls with the parsed answer) into the real recorder of the request's agent; the call is a
real ``tools/call`` to the changing server over streamable HTTP.
"""

from __future__ import annotations

import contextvars
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client
from openai.types.chat import ChatCompletion
from tests.support.matrix_drivers import CHANGING_SERVER, http_server
from tests.support.processor_helpers import instrumented_pipeline

from otel_mcp_health.core.offered import OfferedTool
from otel_mcp_health.instrumentation import _agents, record_model_request
from otel_mcp_health.instrumentation._answers import ANSWERS, arguments_digest
from otel_mcp_health.model_requests._answers import answered

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[str]:
    with http_server(str(CHANGING_SERVER), "http", "edit") as url:
        yield url + "/mcp"


def _answer(name: str) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None,
                "tool_calls": [{"id": "t", "type": "function",
                                "function": {"name": name, "arguments": "{}"}}]}}],
        }
    )  # fmt: skip


async def test_a_hostile_answered_name_costs_a_tools_call_nothing(server: str) -> None:
    with instrumented_pipeline():
        async with Client(server) as client:
            tools = list((await client.list_tools()).tools)
        offered = [
            OfferedTool(t.name, t.description, json.loads(json.dumps(t.input_schema)))
            for t in tools
        ]

        def hostile_agent() -> None:
            record_model_request("openai.chat", offered)
            record = _agents.answer_recorder()
            assert record is not None
            answered(_answer("-" * 30_000), record)  # a name no API accepts, all separators

        for _ in range(4):
            contextvars.Context().run(hostile_agent)
        kept = sum(len(p.name) for p in ANSWERS._pending)
        started = time.perf_counter()
        async with Client(server) as client:
            await client.call_tool("create_ticket", {"title": "t"})
        spent = time.perf_counter() - started
    assert kept <= 4 * 1024, kept  # no longer than a name any request may offer
    assert spent < 0.5, spent  # before: each pending name's suffixes built, quadratic


@pytest.mark.parametrize(
    "arguments",
    [
        {"title": "t", "body": "x" * 50_000_000},  # a document uploaded through a tool
        {"title": "t", "rows": [[i] * 10 for i in range(300_000)]},  # a table
    ],
    ids=["large-string", "many-values"],
)
def test_large_call_arguments_are_not_serialized_to_be_digested(arguments: Any) -> None:
    """While any answer is pending, every ``tools/call`` digests its arguments to claim one:
    arguments past the bound are not digested, and finding that out must not cost a
    serialization of all of them (before: 0.17 s for 50 MB, 0.4 s for 3 million values, per
    call; a call looked only at argument names before the tie)."""
    started = time.perf_counter()
    assert arguments_digest(arguments) is None
    assert time.perf_counter() - started < 0.05


async def test_answers_naming_only_the_applications_own_tools_keep_nothing(server: str) -> None:
    """An agent loop whose model mostly calls the application's own tools: each answer's calls
    were kept pending (each holding its request's whole snapshot) until 256 newer ones pushed
    them out, so the snapshots held outside the agents' byte bound grew with every turn."""
    with instrumented_pipeline():
        async with Client(server) as client:
            tools = list((await client.list_tools()).tools)
        offered = [
            OfferedTool(t.name, t.description, json.loads(json.dumps(t.input_schema)))
            for t in tools
        ]
        own = OfferedTool("lookup_weather", "The application's own.", {"type": "object"})
        for _ in range(300):
            record_model_request("openai.chat", [*offered, own])
            record = _agents.answer_recorder()
            assert record is not None
            answered(_answer("lookup_weather"), record)
        held = {id(p.owner) for p in ANSWERS._pending}
    assert len(held) == 0, len(held)
