"""Google GenAI (``google-genai``): generate_content and generate_content_stream, sync and async,
against the scripted endpoint's Gemini routes. Runs in the ``model_clients`` cell of noxfile.py.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
from google import genai
from google.genai import types

from otel_mcp_health.core.offered import OfferedTool
from tests.model_requests.harness import DEFINITIONS, OFFERED, Drive, Recorded, compare, dumped
from tests.support.scripted_model import ScriptedModel

DECLARATIONS = [
    types.FunctionDeclaration(name=n, description=d, parameters_json_schema=s)
    for n, d, s in DEFINITIONS
]
#: The provider's own tool beside the functions (never read).
TOOLS = [
    types.Tool(function_declarations=DECLARATIONS),
    types.Tool(google_search=types.GoogleSearch()),
]
CONFIG = types.GenerateContentConfig(tools=TOOLS)


#: The clients made, kept alive while the test runs (a client closes its connections when it is
#: collected, which may be while its own ``models`` is still sending).
_CLIENTS: list[genai.Client] = []


@pytest.fixture(autouse=True)
def _collected() -> Iterator[None]:
    """The test's clients are let go (and collected) when it ends, not at interpreter exit."""
    yield
    _CLIENTS.clear()
    gc.collect()


def _client(model: ScriptedModel) -> genai.Client:
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=model.url + "/a"))
    _CLIENTS.append(client)
    return client


def generate(model: ScriptedModel) -> Any:
    return dumped(_client(model).models.generate_content(model="g", contents="hi", config=CONFIG))


async def generate_async(model: ScriptedModel) -> Any:
    got = await _client(model).aio.models.generate_content(model="g", contents="hi", config=CONFIG)
    return dumped(got)


def stream(model: ScriptedModel) -> Any:
    chunks = _client(model).models.generate_content_stream(model="g", contents="hi", config=CONFIG)
    return dumped(list(chunks))


def stream_abandoned(model: ScriptedModel) -> Any:
    chunks = _client(model).models.generate_content_stream(model="g", contents="hi", config=CONFIG)
    first = next(chunks)
    chunks.close()
    return dumped(first)


async def stream_async(model: ScriptedModel) -> Any:
    chunks = await _client(model).aio.models.generate_content_stream(
        model="g", contents="hi", config=CONFIG
    )
    return dumped([chunk async for chunk in chunks])


def dict_config(model: ScriptedModel) -> Any:
    """Plain dicts, snake_case, as an application may pass them."""
    config: Any = {
        "tools": [
            {
                "function_declarations": [
                    {"name": n, "parameters_json_schema": s} | ({"description": d} if d else {})
                    for n, d, s in DEFINITIONS
                ]
            }
        ]
    }
    got = _client(model).models.generate_content(model="g", contents="hi", config=config)
    return dumped(got)


CASES: list[Drive] = [generate, generate_async, stream, stream_abandoned, stream_async, dict_config]


@pytest.mark.parametrize("drive", CASES, ids=[c.__name__ for c in CASES])
def test_each_request_records_exactly_what_it_offered(drive: Drive, recorded: Recorded) -> None:
    compare(drive, recorded)
    assert recorded == [("google_genai", OFFERED)]


def test_a_gemini_schema_is_read_as_sent(recorded: Recorded) -> None:
    """``parameters`` (Gemini's own schema type) is read as the request carries it."""
    schema = types.Schema(type=types.Type.OBJECT, properties={"x": types.Schema(type="STRING")})
    config = types.GenerateContentConfig(
        tools=[
            types.Tool(
                function_declarations=[types.FunctionDeclaration(name="f", parameters=schema)]
            )
        ]
    )

    def drive(model: ScriptedModel) -> Any:
        return dumped(
            _client(model).models.generate_content(model="g", contents="hi", config=config)
        )

    compare(drive, recorded)
    wire = {"properties": {"x": {"type": "STRING"}}, "type": "OBJECT"}
    assert recorded == [("google_genai", (OfferedTool("f", None, wire),))]


def create_ticket(title: str) -> str:
    """Create a ticket."""
    return f"created {title}"


def test_automatic_function_calling_reads_every_turn(recorded: Recorded) -> None:
    """A Python function as a tool: the SDK declares it, calls it when the model asks, and sends
    the result back: two requests, each read."""

    def drive(model: ScriptedModel) -> Any:
        model.script("a", ("create_ticket", {"title": "printer"}))
        config = types.GenerateContentConfig(tools=[create_ticket])
        got = _client(model).models.generate_content(model="g", contents="hi", config=config)
        return got.text

    hooked = compare(drive, recorded)
    assert hooked.outcome == "done"
    assert [api for api, _ in recorded] == ["google_genai", "google_genai"]
    for _, offered in recorded:
        assert [(t.name, t.description) for t in offered] == [("create_ticket", "Create a ticket.")]
