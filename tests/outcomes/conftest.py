"""Fixtures of the outcome suite: real destinations, the destination MCP server, the pipeline."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.outcomes.destinations import PublishTarget
from tests.support.processor_helpers import Pipeline, instrumented_pipeline


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def instrumented() -> Iterator[Pipeline]:
    """The processor pipeline with the MCP client instrumented into it."""
    with instrumented_pipeline() as pipeline:
        yield pipeline


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "tickets.db"
    with sqlite3.connect(path) as connection:
        connection.execute("create table tickets (id text primary key, version integer)")
    return path


@pytest.fixture
def publish_target() -> Iterator[PublishTarget]:
    with PublishTarget().running() as target:
        yield target
