"""Fixtures of the verifier suite: the processor pipeline with the MCP client instrumented."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
for path in (HERE, HERE.parent / "processor"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from processor_helpers import Pipeline  # noqa: E402

from otel_mcp_health.verifiers import clear_verifiers  # noqa: E402


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def instrumented() -> Iterator[Pipeline]:
    """The processor pipeline with the MCP client instrumented into it."""
    from otel_mcp_health import McpHealthInstrumentor

    pipeline = Pipeline.build()
    instrumentor = McpHealthInstrumentor()
    instrumentor.instrument(tracer_provider=pipeline.provider, meter_provider=pipeline.meters)
    try:
        yield pipeline
    finally:
        instrumentor.uninstrument()
        clear_verifiers()
        pipeline.provider.shutdown()
