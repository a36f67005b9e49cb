"""A session that inherits its server's discovery checks calls as a session that listed the tools.

A session-per-call client (LangChain's default, llama-index's ``BasicMCPClient``) lists the tools
in one session and runs each call in a fresh one. The matrix cells check this against real
servers on every SDK line (tests/matrix/test_session_per_call.py); this is the same contract in
the fast set, on the in-process server: the real ``mcp`` client, the real instrumentation, the
recorded spans replayed into the unmodified processor, whose every verdict must be the one the
contract oracle (``contract_oracle.py``) derives from the whole history. As in the matrix cells,
``create_ticket`` has an outcome verifier; here it answers only once the call's session has
closed, so the call's span ends after its session's end span: the call is still the session's
(it started while the session was open), judged against the session's own discovery.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client
from opentelemetry.sdk.trace import ReadableSpan
from tests.integration.mcp_health_servers import build_server
from tests.integration.scenarios import list_all
from tests.processor.replay import Recorder, assert_oracle_agrees, replay
from tests.support.readme_policy import installed_readme_policy

from otel_mcp_health import McpHealthInstrumentor
from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts
from otel_mcp_health.verifiers import clear_verifiers, register_verifier

pytestmark = pytest.mark.anyio

#: (tool, arguments, read timeout) -> the verdict and reason of a session that listed the tools
#: (the matrix cells' table, tests/matrix/test_session_per_call.py).
CONTRACT_CASES: list[tuple[str, dict[str, Any], float | None, tuple[str, str]]] = [
    ("no_such_tool", {}, None, ("stale_catalog", "catalog_unknown_tool_called")),
    ("create_ticket", {"title": "t"}, None, ("stale_catalog", "catalog_missing_required_argument")),
    ("lookup", {}, None, ("healthy", "outcome_not_required")),
    ("lookup", {"seconds": 3}, 0.5, ("tool_failed", "timeout")),
]


#: Set once a call's session has closed: ``create_ticket``'s verifier answers only then.
SESSION_CLOSED = threading.Event()


def _confirm_after_the_session(call: object) -> bool:
    """Confirms every ``create_ticket`` (the matrix cells' verifier), once its session closed."""
    SESSION_CLOSED.wait(10)
    return True


@pytest.fixture
def recorded() -> Iterator[Recorder]:
    """The instrumentation's raw spans, recorded for replay; the README's outcome policy and
    the ``create_ticket`` verifier installed."""
    recorder = Recorder()
    instrumentor = McpHealthInstrumentor()
    instrumentor.instrument(tracer_provider=recorder.provider)
    clear_verifiers()
    register_verifier("create_ticket", _confirm_after_the_session, method="destination_query")
    try:
        with installed_readme_policy():
            yield recorder
    finally:
        clear_verifiers()
        instrumentor.uninstrument()
        recorder.provider.shutdown()


async def _fresh_call(
    server: Any, name: str, arguments: dict[str, Any], read_timeout: float | None, *, listed: bool
) -> None:
    """One call in a session of its own (``listed``: the session lists the tools first)."""
    SESSION_CLOSED.clear()
    try:
        async with Client(server) as client:
            if listed:
                await list_all(client)
            await client.call_tool(name, arguments, read_timeout_seconds=read_timeout)
    except Exception:  # an MCP error answer or a timeout is part of the scenario
        pass
    finally:
        SESSION_CLOSED.set()


def _row(span: ReadableSpan) -> tuple[Any, ...]:
    a = span.attributes or {}
    return (span.name, a.get(A.VERDICT), a.get(A.REASON), a.get(A.CATALOG_INHERITED))


def _started(span: ReadableSpan) -> int:
    return span.start_time or 0


def _ended_after_its_session(spans: list[ReadableSpan], name: str) -> list[bool]:
    """For each ``name`` span: whether its session's end span ended before it."""
    ends: set[object] = set()
    found = []
    for span in spans:
        key = (span.attributes or {}).get(A.SESSION_KEY)
        if span.name == A.SESSION_END_SPAN_NAME:
            ends.add(key)
        elif span.name == name:
            found.append(key in ends)
    return found


async def test_an_inherited_session_checks_calls_as_a_listing_one(recorded: Recorder) -> None:
    server = build_server()
    with anyio.fail_after(60):
        for name, arguments, timeout, _ in CONTRACT_CASES:
            await _fresh_call(server, name, arguments, timeout, listed=True)
        async with Client(server) as discovery:
            await list_all(discovery)
        for name, arguments, timeout, _ in CONTRACT_CASES:
            await _fresh_call(server, name, arguments, timeout, listed=False)
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    spans = recorded.collect.spans
    assert _ended_after_its_session(spans, "tools/call create_ticket") == [True, True]
    assert_oracle_agrees(recorded.collect.events)
    exported, _ = replay(recorded.collect.events)
    calls = sorted((s for s in exported if s.name.startswith("tools/call")), key=_started)
    rows = [_row(s) for s in calls]
    expected = [(f"tools/call {name}", *verdict) for name, _, _, verdict in CONTRACT_CASES]
    assert rows[: len(CONTRACT_CASES)] == [(*r, None) for r in expected]  # listed themselves
    assert rows[len(CONTRACT_CASES) :] == [(*r, True) for r in expected]  # inherited
