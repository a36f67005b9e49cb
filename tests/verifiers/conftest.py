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

from processor_helpers import Pipeline, instrumented_pipeline  # noqa: E402


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def instrumented() -> Iterator[Pipeline]:
    """The processor pipeline with the MCP client instrumented into it."""
    with instrumented_pipeline() as pipeline:
        yield pipeline
