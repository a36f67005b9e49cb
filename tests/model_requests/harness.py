"""How every LLM client test drives its library: once without the instrumentation, once with the
real ``McpHealthInstrumentor``, each against a fresh scripted endpoint; the request bodies the
endpoint received must be byte-identical and the application's outcome (its result, or the
exception it got) equal, and the recorder must have received exactly what the request offered.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from otel_mcp_health import instrumentation
from otel_mcp_health.core.offered import OfferedTool
from tests.support.scripted_model import ScriptedModel, scripted_model

Recorded = list[tuple[str, tuple[OfferedTool, ...]]]
#: Drives the application's model client against the endpoint; returns what the application got.
Drive = Callable[[ScriptedModel], Any]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "The ticket's title."},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["title"],
}
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
#: (name, description, schema) of the function tools every request offers.
DEFINITIONS = (
    ("create_ticket", "Create a ticket.", SCHEMA),
    ("notes-list_notes", None, EMPTY),
    ("lookup", "Look something up: ünïcode ✓.", {"type": "object"}),
)
#: What the recorder must receive for :data:`DEFINITIONS`.
OFFERED = tuple(OfferedTool(*definition) for definition in DEFINITIONS)
MESSAGES = [{"role": "user", "content": "Open a ticket for the printer."}]


@contextmanager
def instrumented() -> Iterator[None]:
    """The real ``McpHealthInstrumentor``, instrumented for the block."""
    instrumentor = instrumentation.McpHealthInstrumentor()
    instrumentor.instrument(tracer_provider=TracerProvider(), meter_provider=MeterProvider())
    try:
        yield
    finally:
        instrumentor.uninstrument()


@dataclass
class Run:
    bodies: list[bytes]
    outcome: Any


def run(drive: Drive) -> Run:
    """Drive once against a fresh endpoint (a coroutine function is run to completion)."""
    with scripted_model() as model:
        try:
            outcome = drive(model)
            if inspect.iscoroutine(outcome):
                outcome = asyncio.run(outcome)
        except Exception as error:
            outcome = ("raised", type(error).__name__, str(error))
        return Run([request.body for request in model.requests], outcome)


def compare(drive: Drive, recorded: Recorded, *, routed: bool = True) -> Run:
    """Drive without, then with the instrumentation; the bodies and the outcome must not differ.
    ``routed``: the request reaches a route of the endpoint (the others are answered 404 and not
    recorded). Returns the instrumented run (``recorded`` then holds only what it recorded)."""
    plain = run(drive)
    assert recorded == []  # uninstrumented: nothing read
    with instrumented():
        hooked = run(drive)
    assert hooked.bodies == plain.bodies
    assert hooked.outcome == plain.outcome
    assert bool(hooked.bodies) is routed
    return hooked


def dumped(value: Any) -> Any:
    """A library's response object as plain data (to compare across runs): Google GenAI's copy
    of the HTTP response (its headers carry the date) is left out."""
    if isinstance(value, list):
        return [dumped(item) for item in value]
    dump = getattr(value, "model_dump", None)
    if not callable(dump):
        return value
    data = dump()
    if isinstance(data, dict):
        data.pop("sdk_http_response", None)
    return data
