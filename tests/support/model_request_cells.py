"""What the model-request cells share: the changing server, the verdict read back, the offers.

Used by ``tests/agent_loops/test_raw_loops.py`` and ``tests/matrix/test_model_request_*.py``: agents
run through their real model clients against :mod:`tests.support.scripted_model`, over MCP
sessions to ``changing_server.py`` started with ``edit`` (``trigger_edit`` rewrites
``create_ticket``; ``trigger_change`` adds ``added_tool``). Each cell asserts the call's verdict,
its reason and the evidence it was judged on (``mcp_health.catalog.client_source``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts
from tests.support.framework_cells import tool_calls
from tests.support.matrix_drivers import CHANGING_SERVER, SERVER_PYTHON, http_server
from tests.support.processor_helpers import Pipeline

#: ``changing_server.py`` over stdio, with ``trigger_edit`` listed (after the interpreter).
CHANGING_EDIT = [str(CHANGING_SERVER), "stdio", "edit"]
#: Which evidence a call's catalog was judged on, and which evidence the model's request overruled.
OVERRULED_SOURCE = "mcp_health.catalog.overruled_source"
MODEL_REQUEST = "model_request"
#: Whether a call ran in the context of its agent's model request (tied to that agent).
AGENT_TIED = "mcp_health.agent.tied"

#: ``create_ticket`` as the server lists it before and after ``trigger_edit`` (wire shape).
TICKET_BEFORE: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string"}},
    "required": ["title"],
}
TICKET_AFTER: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "priority": {"type": "string"}},
    "required": ["title"],
}
DESCRIPTION_BEFORE = "Creates a ticket."
DESCRIPTION_AFTER = "Creates a ticket with a priority."
#: The tools the server lists first (with ``edit``), and after ``trigger_change``.
FIRST_CATALOG = ["create_ticket", "fail", "trigger_change", "trigger_edit"]
ADDED = "added_tool"


@contextmanager
def changing_http() -> Iterator[str]:
    """A fresh ``changing_server.py http edit`` in its own process; yields its base URL."""
    with http_server(str(CHANGING_SERVER), "http", "edit") as url:
        yield url


def stdio_command() -> tuple[str, list[str]]:
    """The command and arguments that serve ``changing_server.py`` over stdio, with ``edit``."""
    return SERVER_PYTHON, list(CHANGING_EDIT)


def judged(pipeline: Pipeline, tool: str) -> list[tuple[Any, Any, Any]]:
    """Each ``tools/call`` of ``tool``, in start order: (verdict, reason, client_source)."""
    rows = []
    for span in tool_calls(pipeline):
        if span.name == f"tools/call {tool}":
            a = span.attributes or {}
            rows.append((a.get(A.VERDICT), a.get(A.REASON), a.get(A.CATALOG_CLIENT_SOURCE)))
    return rows


def last_call(pipeline: Pipeline, tool: str) -> dict[str, Any]:
    """The attributes of the latest-started ``tools/call`` of ``tool``."""
    spans = [s for s in tool_calls(pipeline) if s.name == f"tools/call {tool}"]
    assert spans, (tool, [s.name for s in pipeline.spans()])
    return dict(spans[-1].attributes or {})


async def receipts() -> None:
    """Wait for every outcome receipt: a verified call's span is exported when it arrives."""
    assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
