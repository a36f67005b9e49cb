"""The loop tutorials teach: MCP tools converted for the OpenAI (or Anthropic) SDK by hand.

No framework and no hook: a plain ``mcp`` ``ClientSession`` lists the tools, the application
converts each into an OpenAI function tool (``{"type": "function", "function": {name,
description, parameters}}``) or an Anthropic tool (``{name, description, input_schema}``),
unchanged, and runs a chat loop with ``openai.AsyncOpenAI`` / ``anthropic.AsyncAnthropic``
pointed at the scripted API. The only evidence of what the agent installed is the model's own
request (``client_source = model_request``). Tutorials convert once: after the server changes, a
loop that lists again but keeps its converted tools offers its model the old catalog.

Each agent turn runs in its own task (as agents served side by side do), over stdio and
streamable HTTP, against ``changing_server.py`` with ``edit``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any, Self

import anyio
import pytest
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from tests.support.model_request_cells import (
    ADDED,
    DESCRIPTION_AFTER,
    DESCRIPTION_BEFORE,
    FIRST_CATALOG,
    MODEL_REQUEST,
    TICKET_AFTER,
    TICKET_BEFORE,
    changing_http,
    judged,
    receipts,
    stdio_command,
)
from tests.support.processor_helpers import Pipeline, instrumented_pipeline
from tests.support.scripted_model import ScriptedModel, scripted_model

pytestmark = pytest.mark.anyio

#: The agent a call was tied to (a label safe to export: ``<api>/<slot>``).
AGENT_LABEL = "mcp_health.agent.label"

TRANSPORTS = ["stdio", "http"]
APIS = ["openai", "anthropic"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def verdicts() -> Iterator[Pipeline]:
    """The instrumented client on one processor pipeline; ``create_ticket`` is verified (so a
    call on the current catalog reads ``healthy``)."""
    from otel_mcp_health.verifiers import register_verifier

    with instrumented_pipeline() as pipeline:
        register_verifier("create_ticket", lambda call: True, method="destination_query")
        yield pipeline


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with scripted_model() as scripted:
        yield scripted


@pytest.fixture(params=TRANSPORTS)
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(transport, base URL): stdio, or streamable HTTP to a fresh server process."""
    if request.param == "stdio":
        yield "stdio", ""
        return
    with changing_http() as base:
        yield "http", base


@asynccontextmanager
async def mcp_session(transport: str, url: str) -> AsyncIterator[Any]:
    """A plain ``ClientSession`` to ``changing_server.py`` (with ``edit``), initialized."""
    from mcp import ClientSession

    if transport == "stdio":
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        command, args = stdio_command()
        streams: Any = stdio_client(StdioServerParameters(command=command, args=args))
    else:
        from mcp.client.streamable_http import streamable_http_client

        streams = streamable_http_client(url + "/mcp")
    with anyio.fail_after(60):
        async with streams as (read, write, *_), ClientSession(read, write) as session:
            await session.initialize()
            yield session


class RawAgent:
    """One agent of the tutorial loop: its own converted tools and its own model client.

    ``convert()`` lists the session's tools and converts them (the tutorial does it once, at
    start); ``turn(prompt)`` runs the chat loop until the model answers text, calling each tool
    the model picks through the session. ``only``, when set, are the MCP tools it converts (an
    application's allow-list); ``own`` are tools of the application's own, offered beside the
    MCP ones."""

    def __init__(
        self, session: Any, model: ScriptedModel, name: str, api: str, *, system: str = "sys"
    ) -> None:
        import anthropic
        import openai

        self.session, self.name, self.api, self.system = session, name, api, system
        self.tools: list[dict[str, Any]] = []
        self.own: list[dict[str, Any]] = []
        self.only: set[str] | None = None
        self.client: Any
        if api == "openai":
            self.client = openai.AsyncOpenAI(base_url=model.base_url(name), api_key="sk-test")
        else:
            base = model.base_url(name, anthropic=True)
            self.client = anthropic.AsyncAnthropic(base_url=base, api_key="sk-test")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.close()  # its connections, on this event loop

    async def convert(self) -> None:
        listed = await self.session.list_tools()
        tools = [t for t in listed.tools if self.only is None or t.name in self.only]
        if self.api == "openai":
            self.tools = [
                {"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema}}
                for t in tools
            ]  # fmt: skip
        else:
            self.tools = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools
            ]
        self.tools += self.own

    async def turn(self, prompt: str) -> None:
        """One user turn, in a task of its own (what it offered stays with that task)."""
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(self._openai if self.api == "openai" else self._anthropic, prompt)

    async def _call(self, name: str, arguments: dict[str, Any]) -> str:
        result = await self.session.call_tool(name, arguments)
        await receipts()
        return "".join(getattr(block, "text", "") for block in result.content)

    async def _openai(self, prompt: str) -> None:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": prompt},
        ]
        while True:
            response = await self.client.chat.completions.create(
                model="scripted", messages=messages, tools=self.tools
            )
            message = response.choices[0].message
            if not message.tool_calls:
                assert message.content == "done"
                return
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                output = await self._call(call.function.name, json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": output})

    async def _anthropic(self, prompt: str) -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        while True:
            response = await self.client.messages.create(
                model="scripted", max_tokens=256, system=self.system, messages=messages,
                tools=self.tools,
            )  # fmt: skip
            uses = [block for block in response.content if block.type == "tool_use"]
            if not uses:
                assert response.content[0].text == "done"
                return
            messages.append({"role": "assistant", "content": [b.model_dump() for b in uses]})
            results = [
                {"type": "tool_result", "tool_use_id": use.id,
                 "content": await self._call(use.name, dict(use.input))}
                for use in uses
            ]  # fmt: skip
            messages.append({"role": "user", "content": results})


def offered_ticket(model: ScriptedModel, agent: str, index: int = -1) -> dict[str, Any]:
    """``create_ticket`` as request ``index`` of ``agent`` offered it: its description and
    schema, whatever the API calls the schema member."""
    offered = model.of(agent)[index].offered_tool("create_ticket")
    assert offered is not None
    schema = offered.get("parameters", offered.get("input_schema"))
    return {"description": offered["description"], "schema": schema}


BEFORE = {"description": DESCRIPTION_BEFORE, "schema": TICKET_BEFORE}
AFTER = {"description": DESCRIPTION_AFTER, "schema": TICKET_AFTER}


# ---- (a) offered the current tools ------------------------------------------------------------
@pytest.mark.parametrize("api", APIS)
async def test_a_model_offered_the_current_tools_is_healthy(
    api: str, server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    async with (
        mcp_session(*server) as session,
        RawAgent(session, model, "a", api) as agent,
    ):
        await agent.convert()
        model.script("a", ("create_ticket", {"title": "t"}))
        await agent.turn("open a ticket")
    # the definitions the model was offered are the MCP ones, unchanged
    assert model.of("a")[0].offered == FIRST_CATALOG
    assert offered_ticket(model, "a", 0) == BEFORE
    assert judged(verdicts, "create_ticket") == [("healthy", "ok", MODEL_REQUEST)]


# ---- (b) kept the old tools after the server changed and the loop listed again ---------------
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("allowed", [False, True], ids=["every-tool", "allow-list"])
async def test_a_kept_old_definition_is_stale(
    api: str, allowed: bool, server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    """``trigger_edit`` rewrites ``create_ticket``; the loop lists again (discovery converges on
    the new catalog) but keeps the tools it converted at start. Converting every tool, the model
    is offered exactly the earlier catalog (its own reason); converting an allow-list, it is
    offered the old definition of one tool (``digest_mismatch``)."""
    async with (
        mcp_session(*server) as session,
        RawAgent(session, model, "a", api) as agent,
    ):
        agent.only = {"create_ticket", "trigger_edit"} if allowed else None
        await agent.convert()
        model.script("a", ("trigger_edit", {}))
        await agent.turn("edit")
        relisted = await session.list_tools()  # converges, not converted
        assert next(t for t in relisted.tools if t.name == "create_ticket").input_schema == (
            TICKET_AFTER
        )
        model.script("a", ("create_ticket", {"title": "t"}))
        await agent.turn("open a ticket")
    assert offered_ticket(model, "a") == BEFORE
    reason = "catalog_digest_mismatch" if allowed else "catalog_earlier_catalog_offered"
    assert judged(verdicts, "create_ticket") == [("stale_catalog", reason, MODEL_REQUEST)]


@pytest.mark.parametrize("api", APIS)
async def test_exactly_the_earlier_catalog_is_stale_even_when_a_tool_was_only_added(
    api: str, server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    """``trigger_change`` only adds ``added_tool``: the kept catalog is a subset of the new one
    (what a subset rule reads as converged), but it is exactly the earlier discovery."""
    async with (
        mcp_session(*server) as session,
        RawAgent(session, model, "a", api) as agent,
    ):
        await agent.convert()
        model.script("a", ("trigger_change", {}))
        await agent.turn("change")
        relisted = await session.list_tools()
        assert ADDED in {t.name for t in relisted.tools}
        model.script("a", ("create_ticket", {"title": "t"}))
        await agent.turn("open a ticket")
    assert model.of("a")[-1].offered == FIRST_CATALOG
    assert judged(verdicts, "create_ticket") == [
        ("stale_catalog", "catalog_earlier_catalog_offered", MODEL_REQUEST)
    ]


# ---- (c) re-listed and converted again --------------------------------------------------------
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("trigger", ["trigger_edit", "trigger_change"])
async def test_a_loop_that_converts_the_new_listing_is_not_stale(
    api: str, trigger: str, server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    async with (
        mcp_session(*server) as session,
        RawAgent(session, model, "a", api) as agent,
    ):
        await agent.convert()
        model.script("a", (trigger, {}))
        await agent.turn("change")
        await agent.convert()
        model.script("a", ("create_ticket", {"title": "t"}))
        await agent.turn("open a ticket")
    if trigger == "trigger_edit":
        assert offered_ticket(model, "a") == AFTER
    else:
        assert model.of("a")[-1].offered == [*FIRST_CATALOG, ADDED]
    assert judged(verdicts, "create_ticket") == [("healthy", "ok", MODEL_REQUEST)]


# ---- (d) two agents, one session ----------------------------------------------------------------
async def test_two_agents_sharing_a_session_each_get_their_own_verdict(
    server: tuple[str, str], model: ScriptedModel, verdicts: Pipeline
) -> None:
    """Agent ``old`` converted before the edit and keeps it; agent ``new`` converts after it.
    ``new`` calling first must not make ``old`` read converged (nor ``old`` make ``new`` stale),
    whatever order they call in."""
    async with (
        mcp_session(*server) as session,
        RawAgent(session, model, "old", "openai") as old,
        RawAgent(session, model, "new", "openai") as new,
    ):
        await old.convert()
        model.script("old", ("trigger_edit", {}))
        await old.turn("edit")
        await new.convert()
        for agent in (new, old, new, old):
            model.script(agent.name, ("create_ticket", {"title": agent.name}))
            await agent.turn("open a ticket")
    assert offered_ticket(model, "old") == BEFORE
    assert offered_ticket(model, "new") == AFTER
    healthy = ("healthy", "ok", MODEL_REQUEST)
    stale = ("stale_catalog", "catalog_earlier_catalog_offered", MODEL_REQUEST)
    assert judged(verdicts, "create_ticket") == [healthy, stale, healthy, stale]
    # each call is tied to the request its turn sent (a turn is a task of its own)
    tied = [
        ((s.attributes or {}).get("mcp_health.agent.tied"), (s.attributes or {}).get(AGENT_LABEL))
        for s in verdicts.named("tools/call create_ticket")
    ]
    assert all(flag is True and str(label).startswith("openai.chat/") for flag, label in tied)


# ---- privacy: nothing the model was sent leaves the process -----------------------------------
CANARIES = {
    "user": "canary-user-5f1c0e",
    "system": "canary-system-9b7d2a",
    "description": "canary-description-3e8f61",
}


@pytest.mark.parametrize("api", APIS)
async def test_canaries_in_the_request_reach_no_span_metric_or_log(
    api: str, model: ScriptedModel, verdicts: Pipeline, caplog: pytest.LogCaptureFixture
) -> None:
    """The user message, the system prompt and a tool description (an application tool beside
    the MCP ones) carry canaries; every exported span (names, attributes, events, resource),
    metric point and log record of the product (its Python records at debug level, and the same
    records exported through an OpenTelemetry log pipeline) is searched for them. The model
    clients' own debug logs print whole requests: they are the application's, not searched."""
    logs = InMemoryLogRecordExporter()
    loggers = LoggerProvider()
    loggers.add_log_record_processor(SimpleLogRecordProcessor(logs))
    handler = LoggingHandler(level=logging.DEBUG, logger_provider=loggers)
    product = logging.getLogger("otel_mcp_health")
    product.addHandler(handler)
    caplog.set_level(logging.DEBUG)
    try:
        system = f"be brief {CANARIES['system']}"
        async with (
            mcp_session("stdio", "") as session,
            RawAgent(session, model, "a", api, system=system) as agent,
        ):
            own = {"type": "object", "properties": {"q": {"type": "string"}}}
            if api == "openai":
                agent.own = [{"type": "function", "function": {
                    "name": "lookup", "description": CANARIES["description"],
                    "parameters": own}}]  # fmt: skip
            else:
                agent.own = [
                    {"name": "lookup", "description": CANARIES["description"], "input_schema": own}
                ]
            await agent.convert()
            model.script("a", ("create_ticket", {"title": "t"}))
            await agent.turn(f"open a ticket {CANARIES['user']}")
        verdicts.provider.force_flush()
    finally:
        product.removeHandler(handler)
        loggers.shutdown()
    body = model.of("a")[0].body.decode()
    assert all(canary in body for canary in CANARIES.values())  # the model was sent them
    exported = [_span_text(span) for span in verdicts.spans()]
    data = verdicts.reader.get_metrics_data()
    exported.append(data.to_json() if data is not None else "")
    exported += [
        record.getMessage() + repr(record.exc_info)
        for record in caplog.records
        if record.name.startswith("otel_mcp_health")
    ]
    exported += [record.to_json() for record in logs.get_finished_logs()]
    leaked = {kind for kind, canary in CANARIES.items() if any(canary in t for t in exported)}
    assert not leaked
    # and the request was read: the call was judged on what the model was offered
    assert judged(verdicts, "create_ticket") == [("healthy", "ok", MODEL_REQUEST)]


def _span_text(span: Any) -> str:
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    links = [dict(link.attributes or {}) for link in span.links]
    resource = dict(span.resource.attributes)
    return repr((span.name, dict(span.attributes or {}), events, links, resource))
