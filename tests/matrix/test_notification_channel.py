"""A server restart behind an open listener (docs/model.md#scope), on both SDK lines.

Over streamable HTTP a session hears ``list_changed`` only on the GET stream the SDK attaches
after the handshake. When the server process restarts on the same port, that stream dies (the
SDK's reconnection is refused: the new process does not know the session), though the session
itself stays open. From then on no session of the server can hear a change, so the catalog that
fresh sessions inherit is held to the maximum age (1 s here): ``stale`` / ``refresh_overdue``
once it is older, where it stayed ``converged`` while the listener's stream was attached.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tests.support.matrix_drivers import REFERENCE_HTTP, SERVER_PYTHON, Events, connect
from tests.support.processor_helpers import Pipeline, instrumenting

from otel_mcp_health import attributes as A
from otel_mcp_health.environment_variables import (
    OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S as MAX_AGE,
)

pytestmark = pytest.mark.anyio

MAX_AGE_S = 1.0
PAST_MAX_AGE_S = MAX_AGE_S + 0.3
#: Bounded waits for the GET stream to attach, and to be found dead after the restart (the
#: SDK waits about 1 s before its reconnection attempt).
ATTACH_S = 5.0
DETACH_S = 10.0


@pytest.fixture
def verdicts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Pipeline]:
    """The instrumented client judged by a processor configured with a 1 s maximum age."""
    monkeypatch.setenv(MAX_AGE, str(MAX_AGE_S))
    pipeline = Pipeline.build()
    try:
        with instrumenting(pipeline):
            yield pipeline
    finally:
        pipeline.provider.shutdown()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def reference_server(port: int) -> Iterator[subprocess.Popen[str]]:
    """The reference server on ``port`` in its own process, killed (not stopped) on exit."""
    process = subprocess.Popen(
        [SERVER_PYTHON, str(REFERENCE_HTTP), str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == f"http://127.0.0.1:{port}"
        yield process
    finally:
        process.kill()
        process.wait(timeout=10)


def _listener_key(pipeline: Pipeline) -> Any:
    """The session key of the first session (the listener)."""
    return (pipeline.named("initialize")[0].attributes or {})[A.SESSION_KEY]


async def _until_channel(pipeline: Pipeline, *, opened: bool, within: float) -> None:
    """Until the listener's ``mcp_health.channel`` span says ``opened`` (bounded; returns anyway,
    so that code without these spans fails on the verdicts)."""
    key = _listener_key(pipeline)
    with anyio.move_on_after(within):
        while not any(  # noqa: ASYNC110  # the spans come from the exporter, no event
            (s.attributes or {}).get(A.CHANNEL_OPEN) is opened
            and (s.attributes or {}).get(A.SESSION_KEY) == key
            for s in pipeline.named(A.CHANNEL_SPAN_NAME)
        ):
            await anyio.sleep(0.05)


async def _fresh_lookup(url: str) -> None:
    """One call in a session of its own (``initialize``, ``tools/call``), as LangChain makes it."""
    async with connect("session", "http", url, Events()) as agent:
        await agent.call("lookup", {})


def _catalog(span: Any) -> tuple[Any, ...]:
    attrs = span.attributes or {}
    return (
        attrs.get(A.CATALOG_INHERITED),
        attrs.get(A.CATALOG_VERDICT),
        attrs.get(A.CATALOG_REASON),
    )


async def test_a_restart_behind_an_open_listener_holds_the_inherited_catalog(
    verdicts: Pipeline,
) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with anyio.fail_after(60), reference_server(port) as first:
        listener_cm = connect("session", "http", url, Events())
        listener = await listener_cm.__aenter__()
        try:
            await _until_channel(verdicts, opened=True, within=ATTACH_S)
            await listener.list_all()
            await anyio.sleep(PAST_MAX_AGE_S)
            await _fresh_lookup(url)  # the listener's GET stream is attached: it would hear
            first.kill()
            first.wait(timeout=10)
            with reference_server(port):
                await _until_channel(verdicts, opened=False, within=DETACH_S)
                await _fresh_lookup(url)  # nobody hears the restarted server
        finally:
            with contextlib.suppress(Exception):  # the session the restart forgot
                await listener_cm.__aexit__(None, None, None)
    heard, unheard = verdicts.named("tools/call lookup")
    assert _catalog(heard) == (True, "converged", "ok")
    assert _catalog(unheard) == (True, "stale", "refresh_overdue")
    assert (unheard.attributes or {})[A.REASON] == "catalog_refresh_overdue"
