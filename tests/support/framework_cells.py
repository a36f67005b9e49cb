"""What the framework cells read back from the pipeline, and how they run a synchronous framework.

Shared by ``tests/matrix/test_framework_*.py``, ``test_langchain_default.py`` and
``test_session_per_call.py``. The calls are listed in the order they *started*, not the order the
processor exported them: a call whose outcome verifier is pending is held until its receipt
arrives and exported then, so on a loaded machine a later call can be exported first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan

from otel_mcp_health import attributes as A
from tests.support.matrix_drivers import CHANGING_SERVER, SERVER_PYTHON
from tests.support.processor_helpers import Pipeline

T = TypeVar("T")

#: How long a framework's synchronous run may take in its worker thread.
THREAD_BOUND_S = 120


def tool_calls(pipeline: Pipeline) -> list[ReadableSpan]:
    """The exported ``tools/call`` spans, in the order the calls started (then by span name)."""
    spans = [s for s in pipeline.spans() if s.name.startswith("tools/call ")]
    return sorted(spans, key=lambda s: (s.start_time or 0, s.name))


def calls(pipeline: Pipeline, *extra: str) -> list[tuple[Any, ...]]:
    """Each call, in start order, as (span name, verdict, reason, *the ``extra`` attributes)."""
    rows = []
    for span in tool_calls(pipeline):
        a = span.attributes or {}
        rows.append((span.name, a.get(A.VERDICT), a.get(A.REASON), *(a.get(k) for k in extra)))
    return rows


def installs(pipeline: Pipeline) -> list[tuple[Any, ...]]:
    """Each install span as (catalog verdict, catalog reason, tool count the client was handed)."""
    return [
        (a.get(A.CATALOG_VERDICT), a.get(A.CATALOG_REASON), a.get(A.CATALOG_CLIENT_TOOL_COUNT))
        for a in (s.attributes or {} for s in pipeline.named(A.INSTALL_SPAN_NAME))
    ]


async def in_thread(run: Callable[[], T]) -> T:
    """A synchronous framework API run in a worker thread, off the test's event loop, bounded by
    :data:`THREAD_BOUND_S` (the thread is abandoned when the bound fails the test)."""
    with anyio.fail_after(THREAD_BOUND_S):
        return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)


def mcpadapt_server(transport: str, request: pytest.FixtureRequest) -> Any:
    """mcpadapt's server argument for ``changing_server.py``: its stdio parameters, or the
    streamable-HTTP URL of the ``changing_url`` fixture."""
    if transport == "stdio":
        from mcp import StdioServerParameters

        return StdioServerParameters(command=SERVER_PYTHON, args=[str(CHANGING_SERVER), "stdio"])
    url: str = request.getfixturevalue("changing_url")
    return {"url": url + "/mcp", "transport": "streamable-http"}
