"""The scenario table: one agent script, every client library, every transport, every SDK line.

The same steps run through ``mcp.ClientSession``, ``mcp.Client`` (2.x), FastMCP's ``Client`` and
an agent's tools from ``langchain-mcp-adapters`` (1.x), over stdio and streamable HTTP, against
the same reference server; the processor must give every ``tools/call`` the verdict the table
says -- the same on every driver and on every cell of the version matrix (``noxfile.py``). A
driver that loses evidence (a missing hook, a span we do not recognise, a second span for one
request) changes a row and fails here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterator
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind
from tests.support.matrix_drivers import Driver, Events, available, connect
from tests.support.processor_helpers import Pipeline, attrs

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts

pytestmark = pytest.mark.anyio

KINDS = available()
TRANSPORTS = ["stdio", "http"]
#: Long enough for every driver's read timeout (langchain's is per session) to fire first.
SLOW = {"seconds": 30}

UNVERIFIED = ("unverified", "add_outcome_verifier", "no_outcome_verifier")
#: (span name, verdict, next action, reason) of every ``tools/call`` the script makes, in order.
TABLE = [
    ("tools/call lookup", "stale_catalog", "bounded_rediscovery", "catalog_no_discovery"),
    ("tools/call create_ticket", *UNVERIFIED),
    ("tools/call fail", "tool_failed", "inspect_tool", "is_error"),
    ("tools/call bad_args", "protocol_error", "fix_request_contract", "jsonrpc_-32602"),
    ("tools/call typed_bad", "tool_failed", "inspect_tool", "output_schema_violation"),
    ("tools/call typed", *UNVERIFIED),
    ("tools/call slow", "effect_unknown", "reconcile_before_retry", "timeout"),
    ("tools/call progress", *UNVERIFIED),
    ("tools/call ask", *UNVERIFIED),
    (
        "tools/call lookup",
        "stale_catalog",
        "bounded_rediscovery",
        "catalog_signal_after_discovery",
    ),
    ("tools/call lookup", *UNVERIFIED),
]
STDIO_CRASH = ("tools/call crash", "effect_unknown", "reconcile_before_retry", "process_exit")


def verdict_row(span: ReadableSpan) -> tuple[Any, ...]:
    a = attrs(span)
    return (span.name, a.get(A.VERDICT), a.get(A.NEXT_ACTION), a.get(A.REASON))


def in_flight(pipeline: Pipeline) -> dict[str, int]:
    return {
        p["attributes"][A.LIVE_STATE]: p["value"]
        for p in pipeline.metric_points(A.METRIC_CALLS_IN_FLIGHT)
    }


async def attempt(step: Awaitable[Any]) -> None:
    """A step whose failure (an exception the application sees) is part of the scenario."""
    try:
        with anyio.fail_after(30):
            await step
    except Exception:  # the application's failure is the scenario
        pass


def client_spans(pipeline: Pipeline) -> list[ReadableSpan]:
    return [s for s in pipeline.spans() if s.kind is SpanKind.CLIENT]


async def script(agent: Driver) -> list[tuple[float, float | None]]:
    """The agent: one call before discovery, discovery, every outcome, then a catalog change."""
    progress_seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        progress_seen.append((progress, total))

    await attempt(agent.call("lookup", {}))  # the SDK lists by itself (output-schema cache)
    await agent.list_all()
    await attempt(agent.call("create_ticket", {"title": "t", "priority": "p"}))
    await attempt(agent.call("fail", {}))
    await attempt(agent.call("bad_args", {"ticketId": "x"}))
    await attempt(agent.call("typed_bad", {}))
    await attempt(agent.call("typed", {}))
    await attempt(agent.call("slow", SLOW, read_timeout=0.2))
    await attempt(agent.call("progress", {}, progress=on_progress))
    await attempt(agent.call("ask", {}))
    await agent.until_list_changed()
    await attempt(agent.call("lookup", {}))
    await agent.list_all()
    await attempt(agent.call("lookup", {}))
    return progress_seen


@pytest.fixture
def no_verifiers() -> Iterator[None]:
    from otel_mcp_health.verifiers import clear_verifiers

    clear_verifiers()
    yield
    clear_verifiers()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
async def test_every_client_gets_the_table_verdicts(
    kind: str, transport: str, verdicts: Pipeline, reference_url: str
) -> None:
    gauges: list[dict[str, int]] = []

    async def on_elicit() -> None:
        gauges.append(in_flight(verdicts))

    url = reference_url + "/mcp"
    with anyio.fail_after(120):
        async with connect(kind, transport, url, Events(on_elicit)) as agent:
            progress_seen = await script(agent)
            if transport == "stdio":
                await attempt(agent.call("crash", {}))
    calls = [s for s in client_spans(verdicts) if s.name.startswith("tools/call")]
    rows = [verdict_row(s) for s in calls if s.name != "tools/call trigger_change"]
    expected = [*TABLE, STDIO_CRASH] if transport == "stdio" else TABLE
    assert rows == expected

    # exactly one CLIENT span per request, each judged in its session and carrying its wire id
    keys = {attrs(s).get(A.SESSION_KEY) for s in client_spans(verdicts)}
    assert len(keys) == 1
    assert None not in keys
    ids = [attrs(s).get(A.JSONRPC_REQUEST_ID) for s in client_spans(verdicts)]
    assert None not in ids
    assert len(set(ids)) == len(ids)

    # the SDK's own tools/list (output-schema cache) is marked internal, never a discovery
    lists = [s for s in client_spans(verdicts) if s.name == "tools/list"]
    assert attrs(lists[0])[A.EVIDENCE_ORIGIN] == A.ORIGIN_INTERNAL
    application = [s for s in lists if attrs(s)[A.EVIDENCE_ORIGIN] == A.ORIGIN_APPLICATION]
    assert attrs(application[-1])[A.CATALOG_VERDICT] == "converged"

    # progress: three notifications seen by the application, three events on the call's span
    assert progress_seen == [(1, 3), (2, 3), (3, 3)]
    progress_span = next(s for s in calls if s.name == "tools/call progress")
    assert [e.name for e in progress_span.events].count(A.PROGRESS_EVENT) == 3

    # elicitation: the call waits on a person, not stalled
    assert gauges == [{"working": 0, "stalled": 0, "waiting_for_user": 1}]

    # list_changed: a SERVER span at its arrival, judged stale against the discovery before it
    signal = next(s for s in verdicts.spans() if s.name == A.NOTIFICATION_SPAN_METHOD)
    assert attrs(signal)[A.CATALOG_VERDICT] == "stale"


@pytest.mark.usefixtures("no_verifiers")
@pytest.mark.parametrize("kind", KINDS)
async def test_every_client_gets_outcome_verdicts(
    kind: str, verdicts: Pipeline, reference_url: str
) -> None:
    from otel_mcp_health.verifiers import register_verifier

    register_verifier("create_ticket", lambda call: True, method="destination_query")
    register_verifier("typed", lambda call: False, method="file_digest")
    with anyio.fail_after(60):
        async with connect(kind, "http", reference_url + "/mcp", Events()) as agent:
            await agent.list_all()
            await agent.call("create_ticket", {"title": "t", "priority": "p"})
            await agent.call("typed", {})
            assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    rows = [verdict_row(s) for s in client_spans(verdicts) if s.name.startswith("tools/call")]
    assert rows == [
        ("tools/call create_ticket", "healthy", "none", "ok"),
        ("tools/call typed", "false_success", "verify_destination", "verifier_failed"),
    ]


@pytest.mark.parametrize("kind", KINDS)
async def test_every_client_gets_the_http_failure_verdicts(
    kind: str, verdicts: Pipeline, reference_url: str
) -> None:
    targets = [
        reference_url + "/authn",
        reference_url + "/authz",
        reference_url + "/down",
        "http://mcp-health-test.invalid/mcp",
    ]
    for url in targets:

        async def handshake(url: str = url) -> None:
            async with connect(kind, "http", url, Events()):
                pass

        await attempt(handshake())
    handshakes = [
        (*verdict_row(s)[1:], attrs(s)[A.CALL_FIRST_FAILED_LAYER])
        for s in client_spans(verdicts)
        if s.name == "initialize"
    ]
    assert handshakes == [
        ("needs_auth", "refresh_token_once", "invalid_token", "authorization"),
        ("needs_auth", "request_scope", "insufficient_scope", "authorization"),
        ("transport_error", "retry_within_budget", "http_503", "transport"),
        ("transport_error", "retry_within_budget", "dns_failure", "transport"),
    ]


CANARY = "matrix-canary-5d1e0b"


@pytest.mark.parametrize("kind", KINDS)
async def test_no_client_library_leaks_arguments_or_server_text(
    kind: str, verdicts: Pipeline, reference_url: str
) -> None:
    """The server echoes the arguments in its error (as real servers do) and FastMCP copies
    exception text onto its own span: every exported span, ours or borrowed, is clean."""
    with anyio.fail_after(60):
        async with connect(kind, "http", reference_url + "/mcp", Events()) as agent:
            await agent.list_all()
            await attempt(agent.call("bad_args", {"ticketId": CANARY}))
            await attempt(agent.call("nope", {"q": CANARY}))
    exported = "\n".join(span.to_json() for span in verdicts.spans())
    assert "tools/call bad_args" in exported
    assert CANARY not in exported
