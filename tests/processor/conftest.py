"""Fixtures of the processor suite: a real OpenTelemetry pipeline with the processor in front.

``pipeline`` is a ``TracerProvider`` whose only span processor is :class:`McpHealthSpanProcessor`
wrapping ``SimpleSpanProcessor(InMemorySpanExporter())``, plus an in-memory metric reader. The
``instrumented`` fixture adds the real MCP instrumentation on top, for scenarios with real servers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.support.processor_helpers import Pipeline, instrumenting


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def pipeline() -> Iterator[Pipeline]:
    built = Pipeline.build()
    yield built
    built.provider.shutdown()


@pytest.fixture
def instrumented(pipeline: Pipeline) -> Iterator[Pipeline]:
    """``pipeline`` with the MCP client instrumented into it (uninstrumented afterwards)."""
    with instrumenting(pipeline):
        yield pipeline
