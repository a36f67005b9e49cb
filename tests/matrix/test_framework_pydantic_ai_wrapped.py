"""pydantic-ai: one ``MCPToolset`` inside two wrapped toolsets lists its tools twice at once.

An agent given ``toolset.prefixed("a")`` and ``toolset.prefixed("b")`` of one ``MCPToolset``
asks both wrappers for their tools concurrently, and both page the same session's ``tools/list``
at the same time: two traversals whose pages interleave. Before, the second first page replaced
the first traversal, whose next page then read a loop: ``incomplete`` / ``cursor_loop`` on the
traversal's end and ``stale_catalog`` on every call, for an agent that listed correctly. Each
traversal is now its own cursor chain: both read ``converged``. The agent runs for real (the
shipped ``FunctionModel`` scripts the model) against ``paged_server.py`` (three pages) over stdio.
Collected where pydantic-ai-slim[mcp] is installed.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from tests.support.matrix_drivers import INTEGRATION, SERVER_PYTHON
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio


def _model(steps: list[tuple[str, dict[str, Any]]]) -> Any:
    """A ``FunctionModel`` that calls ``steps`` one per model request, then answers text."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    script = iter(steps)

    def respond(messages: list[Any], info: Any) -> ModelResponse:
        step = next(script, None)
        if step is None:
            return ModelResponse(parts=[TextPart("done")])
        name, args = step
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"call-{name}")])

    return FunctionModel(respond)


def _application_pages(verdicts: Pipeline) -> list[ReadableSpan]:
    return [
        s
        for s in verdicts.named("tools/list")
        if (s.attributes or {}).get(A.EVIDENCE_ORIGIN) == A.ORIGIN_APPLICATION
    ]


async def test_one_toolset_in_two_wrapped_toolsets_reads_converged(verdicts: Pipeline) -> None:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset

    server = [str(INTEGRATION / "paged_server.py"), "stdio", "paged"]
    toolset = MCPToolset(StdioTransport(command=SERVER_PYTHON, args=server))
    steps = [("a_echo", {"text": "t"}), ("b_echo", {"text": "t"})]
    agent = Agent(_model(steps), toolsets=[toolset.prefixed("a"), toolset.prefixed("b")])
    with anyio.fail_after(60):
        result = await agent.run("go")
    assert result.output == "done"
    pages = _application_pages(verdicts)
    indices = [(s.attributes or {}).get(A.CATALOG_PAGE_INDEX) for s in pages]
    assert indices[:2] == [0, 0]  # both traversals started before either went on
    assert sorted(indices) == sorted([0, 1, 2] * (len(pages) // 3))
    ends = [
        ((s.attributes or {}).get(A.CATALOG_VERDICT), (s.attributes or {}).get(A.CATALOG_REASON))
        for s in pages
        if A.CATALOG_VERDICT in (s.attributes or {})
    ]
    assert len(ends) >= 2
    assert set(ends) == {("converged", "ok")}
    calls = [s.attributes or {} for s in verdicts.named("tools/call echo")]
    assert len(calls) == 2
    for call in calls:
        assert (call[A.CATALOG_VERDICT], call[A.CALL_CONTRACT]) == ("converged", "ok")
