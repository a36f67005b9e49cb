"""Attacks on the per-agent tie (issue 37 red team): false greens through the tie.

The real changing server over streamable HTTP, fresh ``mcp.Client`` sessions, the real
instrumentation and span processor; model requests and answers handed to the instrumentation
exactly as the LLM-client hooks hand them (``record_model_request``, ``answer_recorder``).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client
from tests.integration.test_agents import (
    calls,
    changed,
    judged,
    listed,
    offered,
)
from tests.support.matrix_drivers import CHANGING_SERVER, http_server
from tests.support.processor_helpers import Pipeline, instrumented_pipeline

from otel_mcp_health.instrumentation import _agents, record_model_request

pytestmark = pytest.mark.anyio


@pytest.fixture
def verdicts() -> Iterator[Pipeline]:
    with instrumented_pipeline() as pipeline:
        yield pipeline


@pytest.fixture
def server() -> Iterator[str]:
    with http_server(str(CHANGING_SERVER), "http", "edit") as url:
        yield url + "/mcp"


async def call(server: Any, arguments: dict[str, Any]) -> None:
    async with Client(server) as client:
        await client.call_tool("create_ticket", arguments)


async def test_a_call_of_a_tool_its_context_agent_did_not_offer_is_not_judged_on_that_agent(
    verdicts: Pipeline, server: str
) -> None:
    """The context's agent offered only ``fail`` of the server (a filter); a ``create_ticket``
    call runs in that context (the application's own call, or a sub-agent's task started from
    it). Another agent offers the old ``create_ticket``: the call cannot be tied to an agent that
    offered the tool, so the untied rule holds: stale, never converged on an offer without it."""
    before = await listed(server)
    await changed(server, "trigger_edit")
    contextvars.Context().run(record_model_request, "openai.chat", offered(before))  # stale
    record_model_request("openai.chat", offered([t for t in before if t.name == "fail"]))
    await call(server, {"title": "t"})
    attrs = calls(verdicts)[-1]
    assert judged(attrs)[:2] == ("stale", "earlier_catalog_offered"), judged(attrs)


async def test_an_old_pending_answer_of_a_current_agent_does_not_turn_a_stale_agents_call_green(
    verdicts: Pipeline, server: str
) -> None:
    """Agent A (current tools) was answered with a ``create_ticket`` call that never ran (an
    abandoned stream is recorded at its end; a framework may refuse the call). Later agent B,
    on the old definition, asks for the same call, run in another task (LangGraph). Two pending
    answers name the call with the same arguments: it cannot be tied to one, so it must not be
    converged while one of them is stale."""
    before = await listed(server)
    now = await changed(server, "trigger_edit")

    def agent(tools: list[Any]) -> None:
        record_model_request("openai.chat", offered(tools))
        record = _agents.answer_recorder()
        assert record is not None
        record([("create_ticket", '{"title": "t"}')])

    contextvars.Context().run(agent, now)  # A: current, its call never runs
    contextvars.Context().run(agent, before)  # B: stale, asks the same
    await asyncio.create_task(call(server, {"title": "t"}), context=contextvars.Context())
    attrs = calls(verdicts)[-1]
    assert judged(attrs)[0] == "stale", judged(attrs)


async def test_a_sub_agent_started_from_an_agents_context_does_not_replace_it(
    verdicts: Pipeline, server: str
) -> None:
    """An outer agent's model request (the old ``create_ticket``) runs in the main task; it
    starts a sub-agent in a task of its own (``asyncio.gather``), whose model is offered the
    current tools. The sub-agent is another agent: the outer one's offer must still count for
    a call that cannot be tied (Google GenAI, LiteLLM's own clients, Bedrock: tied through the
    context only)."""
    before = await listed(server)
    now = await changed(server, "trigger_edit")
    record_model_request("google_genai", offered(before))  # the outer agent: stale
    outer = _agents.AGENT.get()

    async def sub_agent() -> str:
        record_model_request("google_genai", offered(now))
        return _agents.AGENT.get().label  # type: ignore[union-attr]

    (sub_label,) = await asyncio.gather(sub_agent())
    await asyncio.create_task(call(server, {"title": "t"}), context=contextvars.Context())
    attrs = calls(verdicts)[-1]
    assert judged(attrs)[0] == "stale", judged(attrs)
    assert outer is not None
    assert sub_label != outer.label
