"""Verdicts on exported spans with real MCP servers and the real instrumented ``mcp`` client.

The servers are the integration suite's (``tests/integration/mcp_health_servers.py``): a two-page
catalog with ``tools.listChanged``, served in-process (direct dispatcher and legacy streams), over
streamable HTTP on 127.0.0.1 (plus ``/authn``, ``/authz``, ``/down`` routes) and over stdio.

Together these scenarios put on exported spans each of the four catalog verdicts and all ten
session verdicts of a finished call (``healthy`` and ``false_success`` with registered outcome
verifiers); ``working`` is a live state, shown by the in-flight gauge.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from tests.integration.mcp_health_servers import build_server, serve_http
from tests.integration.scenarios import (
    Notifications,
    list_all,
    stdio_params,
    until_list_changed,
)
from tests.processor.gated_http import serve_gated
from tests.support.processor_helpers import Pipeline, attrs, instrumenting, readiness

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio
STDIO_SERVER = str(Path(__file__).parent.parent / "integration" / "stdio_server.py")


def verdict(span: ReadableSpan) -> tuple[Any, Any, Any]:
    a = attrs(span)
    return a.get(A.VERDICT), a.get(A.NEXT_ACTION), a.get(A.REASON)


async def attempt(step: Callable[[], Awaitable[Any]]) -> None:
    """Run a step whose failure is the point of the scenario."""
    try:
        with anyio.fail_after(20):
            await step()
    except Exception:  # the application's failure is the scenario
        pass


# ----------------------------------------------------------------------------------------------
# In-process: the catalog verdicts and the request verdicts
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_inprocess_session_verdicts(instrumented: Pipeline, mode: str) -> None:
    async with Client(build_server(), mode=mode) as client:  # type: ignore[arg-type]
        await list_all(client)
        await client.call_tool("create_ticket", {"title": "t", "priority": "p"})
        await client.call_tool("fail", {})
        await attempt(lambda: client.call_tool("bad_args", {"ticketId": "x"}))
        await attempt(lambda: client.call_tool("typed_bad", {}))
        await attempt(lambda: client.call_tool("slow", {"seconds": 5}, read_timeout_seconds=0.05))
        await client.call_tool("lookup", {})
    final_page = instrumented.named("tools/list")[-1]
    assert attrs(final_page)[A.CATALOG_VERDICT] == "converged"
    got = {s.name: verdict(s) for s in instrumented.named("tools/call")}
    assert got == {
        "tools/call create_ticket": ("unverified", "add_outcome_verifier", "no_outcome_verifier"),
        "tools/call fail": ("tool_failed", "inspect_tool", "is_error"),
        "tools/call bad_args": ("protocol_error", "fix_request_contract", "jsonrpc_-32602"),
        "tools/call typed_bad": ("tool_failed", "inspect_tool", "output_schema_violation"),
        "tools/call slow": ("effect_unknown", "reconcile_before_retry", "timeout"),
        "tools/call lookup": ("unverified", "add_outcome_verifier", "no_outcome_verifier"),
    }
    create = attrs(instrumented.last("tools/call create_ticket"))
    assert create[A.CALL_FIRST_FAILED_LAYER] == "none"
    assert create[A.layer_attribute("authorization")] == "not_applicable"
    assert create[A.layer_attribute("outcome")] == "unobserved"
    assert create[A.CATALOG_VERDICT] == "converged"
    assert attrs(instrumented.last("tools/call slow"))[A.EFFECT_UNKNOWN] is True
    # no server.address in-process: the judged copy names the server, for span metrics
    assert A.SERVER_ADDRESS not in create
    assert create[A.SERVER_NAME] == "health-test-server"
    # the session end span released the processor's state
    assert len(instrumented.processor._sessions) == 0


async def test_stale_after_list_changed_then_converged_after_rediscovery(
    instrumented: Pipeline,
) -> None:
    notifications = Notifications()
    async with Client(build_server(), mode="legacy", message_handler=notifications) as client:
        await list_all(client)
        await until_list_changed(client, notifications)
        await client.call_tool("lookup", {})
        await list_all(client)
        await client.call_tool("lookup", {})
    signal = instrumented.last(A.NOTIFICATION_SPAN_METHOD)
    assert (attrs(signal)[A.CATALOG_VERDICT], attrs(signal)[A.CATALOG_REASON]) == (
        "stale",
        "signal_after_discovery",
    )
    assert readiness(signal) == (
        "stale_catalog",
        "catalog_signal_after_discovery",
        "bounded_rediscovery",
    )
    assert readiness(instrumented.named("tools/list")[-1]) == ("converged", "ok", "none")
    stale_call, fresh_call = instrumented.named("tools/call lookup")
    assert verdict(stale_call) == (
        "stale_catalog",
        "bounded_rediscovery",
        "catalog_signal_after_discovery",
    )
    assert attrs(stale_call)[A.INCIDENT_KEY]
    assert verdict(fresh_call)[0] == "unverified"
    (lag,) = instrumented.metric_points(A.METRIC_CONVERGENCE_LAG)
    assert lag["count"] == 1
    assert lag["sum"] > 0


async def test_incomplete_and_unverifiable_catalogs(instrumented: Pipeline) -> None:
    async with Client(build_server(), mode="legacy") as client:
        await client.call_tool("lookup", {})  # no discovery yet
        await client.list_tools()  # first page only: a nextCursor remains
        await client.call_tool("lookup", {})
        await attempt(lambda: client.list_tools(cursor="not-a-cursor"))  # a failed page
    no_discovery, unfinished = instrumented.named("tools/call lookup")
    assert verdict(no_discovery) == ("stale_catalog", "bounded_rediscovery", "catalog_no_discovery")
    assert attrs(no_discovery)[A.CATALOG_VERDICT] == "unverifiable"
    assert verdict(unfinished) == ("stale_catalog", "resume_discovery", "catalog_cursor_remaining")
    assert attrs(unfinished)[A.CATALOG_VERDICT] == "incomplete"
    failed_page = instrumented.named("tools/list")[-1]
    assert (attrs(failed_page)[A.CATALOG_VERDICT], attrs(failed_page)[A.CATALOG_REASON]) == (
        "incomplete",
        "page_failed",
    )
    assert readiness(failed_page) == ("stale_catalog", "catalog_page_failed", "resume_discovery")


async def test_incompatible_session_when_the_client_does_not_support_the_version() -> None:
    pipeline = Pipeline.build(supported_versions=["2024-11-05"])
    with instrumenting(pipeline):
        async with Client(build_server(), mode="legacy") as client:
            await list_all(client)
            await client.call_tool("lookup", {})
    assert verdict(pipeline.last("initialize")) == (
        "incompatible_session",
        "align_protocol_version",
        "unsupported_version",
    )
    assert verdict(pipeline.last("tools/call lookup"))[0] == "incompatible_session"
    # the catalog converged, but a session without a call is no readier than its handshake
    last_page = pipeline.named("tools/list")[-1]
    assert attrs(last_page)[A.CATALOG_VERDICT] == "converged"
    assert readiness(last_page) == (
        "incompatible_session",
        "unsupported_version",
        "align_protocol_version",
    )


async def test_waiting_for_user_is_not_stuck(instrumented: Pipeline) -> None:
    seen: list[dict[str, int]] = []

    def gauge() -> dict[str, int]:
        return {
            p["attributes"][A.LIVE_STATE]: p["value"]
            for p in instrumented.metric_points(A.METRIC_CALLS_IN_FLIGHT)
        }

    async def elicitation(context: Any, params: Any) -> types.ElicitResult:
        seen.append(gauge())
        return types.ElicitResult(action="accept", content={"ok": True})

    async with Client(build_server(), mode="legacy", elicitation_callback=elicitation) as client:  # type: ignore[arg-type]
        await list_all(client)
        await client.call_tool("ask", {})
    assert seen == [{"working": 0, "stalled": 0, "waiting_for_user": 1}]
    assert gauge() == {"working": 0, "stalled": 0, "waiting_for_user": 0}


class CallStarted(SpanProcessor):
    """Signals when a ``tools/call`` span starts (added after the processor under test)."""

    def __init__(self) -> None:
        self.started = anyio.Event()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if span.name.startswith("tools/call"):
            self.started.set()


async def test_a_long_call_is_working_while_in_flight(instrumented: Pipeline) -> None:
    observed: list[dict[str, int]] = []
    call_started = CallStarted()
    instrumented.provider.add_span_processor(call_started)
    async with Client(build_server(), mode="legacy") as client:
        await list_all(client)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: client.call_tool("slow", {"seconds": 30}))
                await call_started.started.wait()
                observed.append(
                    {
                        p["attributes"][A.LIVE_STATE]: p["value"]
                        for p in instrumented.metric_points(A.METRIC_CALLS_IN_FLIGHT)
                    }
                )
                tg.cancel_scope.cancel()
    assert observed == [{"working": 1, "stalled": 0, "waiting_for_user": 0}]


# ----------------------------------------------------------------------------------------------
# Streamable HTTP: authorization and transport failures, the server/discover era
# ----------------------------------------------------------------------------------------------
async def test_http_verdicts(instrumented: Pipeline) -> None:
    async with serve_http(build_server()) as base:

        async def handshake(route: str) -> None:
            async with (
                httpx2.AsyncClient() as http,
                streamable_http_client(base + route, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()

        for route in ("/authn", "/authz", "/down"):
            await attempt(lambda route=route: handshake(route))

        async def unresolvable() -> None:
            async with Client("http://mcp-health-test.invalid/mcp", mode="legacy"):
                pass

        await attempt(unresolvable)
        async with Client(base + "/mcp") as client:
            await list_all(client)
            await client.call_tool("create_ticket", {"title": "t", "priority": "p"})
            await attempt(
                lambda: client.call_tool("slow", {"seconds": 5}, read_timeout_seconds=0.05)
            )
    handshakes = [
        (*verdict(s), attrs(s)[A.CALL_FIRST_FAILED_LAYER]) for s in instrumented.named("initialize")
    ]
    assert handshakes == [
        ("needs_auth", "refresh_token_once", "invalid_token", "authorization"),
        ("needs_auth", "request_scope", "insufficient_scope", "authorization"),
        ("transport_error", "retry_within_budget", "http_503", "transport"),
        ("transport_error", "retry_within_budget", "dns_failure", "transport"),
    ]
    assert A.VERDICT not in attrs(instrumented.last("server/discover"))
    assert attrs(instrumented.named("tools/list")[-1])[A.CATALOG_VERDICT] == "converged"
    create = instrumented.last("tools/call create_ticket")
    assert verdict(create)[0] == "unverified"
    assert attrs(create)[A.layer_attribute("authorization")] == "passed"
    # the exported server label: address, port and the handshake's name (docs/model.md#scope)
    assert attrs(create)[A.SERVER_ADDRESS] == "127.0.0.1"
    assert attrs(create)[A.SERVER_NAME] == "health-test-server"
    assert verdict(instrumented.last("tools/call slow"))[0] == "effect_unknown"
    incidents = instrumented.counts(A.METRIC_INCIDENTS, A.VERDICT)
    assert incidents == {"needs_auth": 2, "transport_error": 2, "effect_unknown": 1}


async def test_http_failures_in_the_middle_of_a_session(instrumented: Pipeline) -> None:
    """A token expires, a scope is missing, the backend goes down, then all is well again.

    Five calls on the same expired credential are one incident (SPEC §6).
    """
    async with serve_gated(build_server()) as (url, gate), Client(url, mode="legacy") as client:
        await list_all(client)
        for status in (401, 401, 401, 401, 401, 403, 503, None):
            gate.status = status
            await attempt(
                lambda: client.call_tool("create_ticket", {"title": "t", "priority": "p"})
            )
    calls = instrumented.named("tools/call create_ticket")
    assert [verdict(s) for s in calls] == [
        *[("needs_auth", "refresh_token_once", "invalid_token")] * 5,
        ("needs_auth", "request_scope", "insufficient_scope"),
        ("transport_error", "retry_within_budget", "http_503"),
        ("unverified", "add_outcome_verifier", "no_outcome_verifier"),
    ]
    assert attrs(calls[5])[A.AUTH_REQUIRED_SCOPES] == ("tickets:write",)
    assert len({attrs(s)[A.INCIDENT_KEY] for s in calls[:5]}) == 1
    # invalid_token deserves one refresh: attempts 3..5 are beyond the budget (SPEC §6)
    assert [attrs(s)[A.INCIDENT_ATTEMPT] for s in calls[:5]] == [1, 2, 3, 4, 5]
    assert [attrs(s).get(A.RETRY_OVER_BUDGET, False) for s in calls[:5]] == [
        False,
        False,
        True,
        True,
        True,
    ]
    assert A.RETRY_OVER_BUDGET not in attrs(calls[5])  # insufficient_scope: its first failure
    assert A.INCIDENT_KEY not in attrs(calls[-1])
    assert instrumented.counts(A.METRIC_INCIDENTS, A.VERDICT) == {
        "needs_auth": 2,
        "transport_error": 1,
    }
    assert instrumented.counts(A.METRIC_CALLS, A.CALL_FIRST_FAILED_LAYER) == {
        "authorization": 6,
        "transport": 1,
        "none": 1,
    }


# ----------------------------------------------------------------------------------------------
# stdio: a pipe has no authorization layer; a crash after the write is effect_unknown
# ----------------------------------------------------------------------------------------------
async def test_stdio_verdicts(instrumented: Pipeline) -> None:
    async def run() -> None:
        async with Client(stdio_params(STDIO_SERVER), mode="legacy") as client:
            await list_all(client)
            await client.call_tool("lookup", {})
            await client.call_tool("crash", {})

    await attempt(run)
    lookup = instrumented.last("tools/call lookup")
    assert verdict(lookup)[0] == "unverified"
    assert attrs(lookup)[A.layer_attribute("authorization")] == "not_applicable"
    assert attrs(lookup)[A.SERVER_NAME] == "health-test-server"  # stdio: no server.address
    crash = instrumented.last("tools/call crash")
    assert verdict(crash) == ("effect_unknown", "reconcile_before_retry", "process_exit")
    assert attrs(crash)[A.CALL_FIRST_FAILED_LAYER] == "transport"
    calls = instrumented.counts(A.METRIC_CALLS, A.VERDICT)
    assert calls == {"unverified": 1, "effect_unknown": 1}


# ----------------------------------------------------------------------------------------------
# Outcome receipts and reconciliation: healthy, false_success, and a silent call moved
# ----------------------------------------------------------------------------------------------
class CallsEnded(SpanProcessor):
    """Signals (across threads) once ``count`` ``tools/call`` spans have ended."""

    def __init__(self, count: int) -> None:
        self._left = count
        self._lock = threading.Lock()
        self.done = threading.Event()

    def on_end(self, span: ReadableSpan) -> None:
        if span.name.startswith("tools/call"):
            with self._lock:
                self._left -= 1
                if self._left == 0:
                    self.done.set()


@pytest.fixture
def verifiers() -> Iterator[None]:
    from otel_mcp_health.verifiers import clear_verifiers

    clear_verifiers()
    yield
    clear_verifiers()


@pytest.mark.usefixtures("verifiers")
async def test_healthy_and_false_success_with_outcome_verifiers(instrumented: Pipeline) -> None:
    from otel_mcp_health.verifiers import register_verifier

    register_verifier("create_ticket", lambda call: True, method="destination_query")
    register_verifier("typed", lambda call: False, method="file_digest")
    ended = CallsEnded(2)
    instrumented.provider.add_span_processor(ended)
    async with Client(build_server(), mode="legacy") as client:
        await list_all(client)
        await client.call_tool("create_ticket", {"title": "t", "priority": "p"})
        await client.call_tool("typed", {})
        assert await anyio.to_thread.run_sync(ended.done.wait, 10)
    assert verdict(instrumented.last("tools/call create_ticket")) == ("healthy", "none", "ok")
    typed = instrumented.last("tools/call typed")
    assert verdict(typed) == ("false_success", "verify_destination", "verifier_failed")
    assert attrs(typed)[A.CALL_FIRST_FAILED_LAYER] == "outcome"


@pytest.mark.usefixtures("verifiers")
async def test_reconciliation_moves_a_silent_call(instrumented: Pipeline) -> None:
    from otel_mcp_health.instrumentation import report_reconciliation

    arguments = {"seconds": 5}
    async with Client(build_server(), mode="legacy") as client:
        await list_all(client)
        for _ in range(2):  # the second attempt is a retry before reconciliation
            await attempt(lambda: client.call_tool("slow", arguments, read_timeout_seconds=0.05))
        assert report_reconciliation(client, "slow", committed=False, arguments=arguments)
    first, retry = instrumented.named("tools/call slow")
    assert verdict(first)[0] == verdict(retry)[0] == "effect_unknown"
    assert A.RETRY_UNRECONCILED not in attrs(first)
    assert attrs(retry)[A.RETRY_UNRECONCILED] is True
    reconciled = instrumented.last(A.RECONCILE_SPAN_NAME)
    assert verdict(reconciled) == ("tool_failed", "retry_within_budget", "effect_absent")
