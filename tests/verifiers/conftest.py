"""Fixtures of the verifier suite: the processor pipeline with the MCP client instrumented."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.support.processor_helpers import Pipeline, instrumented_pipeline


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def instrumented() -> Iterator[Pipeline]:
    """The processor pipeline with the MCP client instrumented into it."""
    with instrumented_pipeline() as pipeline:
        yield pipeline
