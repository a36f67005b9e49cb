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
from tests.support.matrix_drivers import (
    CHANGING_SERVER,
    MCP_MAJOR,
    SERVER_PYTHON,
    Events,
    open_stdio,
)
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


def installed(pipeline: Pipeline) -> list[tuple[Any, Any]]:
    """Each install span as (tool count the client was handed, digest of those definitions)."""
    return [
        (a.get(A.CATALOG_CLIENT_TOOL_COUNT), a.get(A.CATALOG_CLIENT_DIGEST))
        for a in (s.attributes or {} for s in pipeline.named(A.INSTALL_SPAN_NAME))
    ]


def assert_installed(pipeline: Pipeline, listed: list[dict[str, Any]], names: set[str]) -> None:
    """Every install span recorded exactly the tools ``names`` of the server's listing ``listed``:
    their number, and the digest of their definitions as the server lists them."""
    from otel_mcp_health.core.digest import digest_tools

    chosen = [tool for tool in listed if tool["name"] in names]
    assert len(chosen) == len(names), (names, [tool["name"] for tool in listed])
    records = installed(pipeline)
    assert records, "no install recorded"
    assert set(records) == {(len(names), digest_tools(chosen))}, records


def assert_judged(pipeline: Pipeline, verdict: str, reason: str) -> None:
    """Every install span, and every call, read the catalog ``verdict`` / ``reason``, judged
    against what was installed (``client_source = digest`` on the calls)."""
    judged = {(a.get(A.CATALOG_VERDICT), a.get(A.CATALOG_REASON)) for a in _attrs(pipeline)}
    assert judged == {(verdict, reason)}, judged
    for call in tool_calls(pipeline):
        assert (call.attributes or {}).get(A.CATALOG_CLIENT_SOURCE) == "digest", call.name


def _attrs(pipeline: Pipeline) -> list[Any]:
    spans = [*pipeline.named(A.INSTALL_SPAN_NAME), *tool_calls(pipeline)]
    return [span.attributes or {} for span in spans]


def listed_tools(*argv: str) -> list[dict[str, Any]]:
    """What a server script (``argv`` after :data:`SERVER_PYTHON`) lists over stdio: every page,
    as wire dicts, read through a plain ``ClientSession``. A module-scoped fixture calls it before
    any test's pipeline exists, so the listing is not part of a test's evidence."""
    return anyio.run(_listed_tools, list(argv))


async def _listed_tools(argv: list[str]) -> list[dict[str, Any]]:
    from mcp import StdioServerParameters, types

    parameters = StdioServerParameters(command=SERVER_PYTHON, args=argv)
    tools: list[dict[str, Any]] = []
    async with open_stdio(parameters, Events()) as driver:
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await driver.session.list_tools(params=params)
            tools += [
                t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools
            ]
            cursor = getattr(page, "nextCursor" if MCP_MAJOR == 1 else "next_cursor")
            if cursor is None:
                return tools


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
