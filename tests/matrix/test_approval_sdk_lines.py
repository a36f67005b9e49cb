"""Approved catalogs on every SDK line of the matrix (mcp 1.x ``initialize``, mcp 2.x).

The zero-code suite (``tests/integration/test_approval_zero_code.py``) runs on the 2.x cells; this
module runs on every cell, so the approval of a discovery and of the next call is also proven on
the 1.x line's ``ClientSession``. The servers (``approval_servers.py`` over stdio) are run by the
project's own interpreter; the pins are those of the reviewed catalog as this line's client lists
it, and the instrumentation judges with them (``approved_catalog=``) on a processor pipeline.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from tests.support.framework_cells import tool_calls
from tests.support.matrix_drivers import SERVER_PYTHON, Events, open_stdio
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import McpHealthInstrumentor
from otel_mcp_health import attributes as A
from otel_mcp_health.core.pins import PinFile, pin_server, render_pins

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
CHANGES = ("unchanged", "description", "title", "added")
ARGUMENTS: dict[str, dict[str, Any]] = {
    "read_file": {"path": "notes.txt"},
    "create_ticket": {"title": "t"},
    "upload_keys": {},
}


def _server(change: str) -> Any:
    from mcp import StdioServerParameters

    args = ["-m", "tests.integration.approval_servers", "stdio", change]
    return StdioServerParameters(command=SERVER_PYTHON, args=args, cwd=str(ROOT))


async def _reviewed() -> list[dict[str, Any]]:
    """The reviewed catalog as this SDK line's client lists it (before instrumenting)."""
    async with open_stdio(_server("unchanged"), Events()) as driver:
        listed = await driver.session.list_tools()
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools]


@pytest.fixture
async def pinned(tmp_path: Path) -> AsyncIterator[Pipeline]:
    tools = await _reviewed()
    servers = tuple(pin_server(tools, name=f"approval-{change}") for change in CHANGES)
    path = tmp_path / "approved.toml"
    path.write_text(render_pins(PinFile(servers)), encoding="utf-8")
    pipeline = Pipeline.build()
    instrumentor = McpHealthInstrumentor()
    instrumentor.instrument(
        tracer_provider=pipeline.provider,
        meter_provider=pipeline.meters,
        approved_catalog=str(path),
    )
    try:
        yield pipeline
    finally:
        instrumentor.uninstrument()
        pipeline.provider.shutdown()


def _approval(span: ReadableSpan) -> tuple[Any, ...]:
    a = span.attributes or {}
    return a.get(A.SERVER_NAME), a.get(A.CATALOG_APPROVAL), a.get(A.CATALOG_APPROVAL_REASON)


async def test_each_change_reads_its_approval_and_the_next_call_its_verdict(
    pinned: Pipeline,
) -> None:
    plan = {
        "unchanged": ("read_file",),
        "description": ("read_file", "create_ticket"),
        "title": ("read_file",),
        "added": ("upload_keys", "create_ticket"),
    }
    with anyio.fail_after(120):
        for change, tools in plan.items():
            async with open_stdio(_server(change), Events()) as driver:
                await driver.list_all()
                for tool in tools:
                    await driver.call(tool, ARGUMENTS[tool])
    discoveries = [
        _approval(s) for s in pinned.spans() if A.CATALOG_APPROVAL in (s.attributes or {})
    ]
    assert discoveries == [
        ("approval-unchanged", "approved", None),
        ("approval-description", "drifted", "material_change"),
        ("approval-title", "approved", None),
        ("approval-added", "drifted", "tool_added"),
    ]
    rows = [
        (s.name, (s.attributes or {}).get(A.CALL_APPROVAL), (s.attributes or {}).get(A.REASON))
        for s in tool_calls(pinned)
    ]
    assert rows == [
        ("tools/call read_file", "approved", "no_outcome_verifier"),
        ("tools/call read_file", "unapproved", "tool_unapproved"),
        ("tools/call create_ticket", "approved", "no_outcome_verifier"),
        ("tools/call read_file", "approved", "no_outcome_verifier"),
        ("tools/call upload_keys", "unapproved", "tool_unapproved"),
        ("tools/call create_ticket", "approved", "no_outcome_verifier"),
    ]
