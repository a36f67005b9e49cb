"""Outcome verification and effect reconciliation, end to end (issue 5).

Real MCP server (in-process, through the real instrumented ``mcp.Client``), real destinations
(a file, a sqlite row, an HTTP page on 127.0.0.1), real verifiers, the real processor pipeline.
Every verdict the verifiers and reconciliation can produce is shown on exported spans:

* a delivering tool with a passing receipt → ``healthy``;
* a tool that claims success without delivering → ``false_success``;
* a tool that delivers and then times out → ``effect_unknown`` (retry flagged), then reconciled:
  committed with a passing receipt → ``healthy``; committed but the destination is wrong →
  ``false_success``; committed without a verifier → ``unverified``;
* a tool that times out without delivering → ``effect_unknown``, reconciled absent →
  ``tool_failed`` / ``retry_within_budget``;
* a verifier that is inconclusive → ``unverified``; the ``not_required`` policy → ``healthy``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from opentelemetry.sdk.trace import ReadableSpan
from tests.outcomes.destinations import PublishTarget, build_destination_server, sha256_text
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts, report_reconciliation
from otel_mcp_health.verifiers import (
    file_digest,
    from_callable,
    http_status,
    outcome_not_required,
    register_verifier,
    sqlite_row,
)

pytestmark = pytest.mark.anyio
TIMEOUT_S = 0.5


class World:
    """The three destinations, the arguments that target each, and their verifiers."""

    def __init__(self, tmp_path: Path, database: Path, target: PublishTarget) -> None:
        self.tmp_path, self.database, self.target = tmp_path, database, target
        self.counter = 0

    def arguments(self, kind: str) -> dict[str, Any]:
        self.counter += 1
        n = self.counter
        if kind == "write_report":
            return {"path": str(self.tmp_path / f"report-{n}.txt"), "content": f"Q{n} numbers"}
        if kind == "insert_ticket":
            return {"db": str(self.database), "id": f"T-{n}"}
        return {"base": self.target.base, "slug": f"release-{n}"}

    def verifier(self, kind: str) -> Any:
        if kind == "write_report":
            return file_digest(
                path=lambda c: c.arguments["path"],
                expected_sha256=lambda c: sha256_text(c.arguments["content"]),
            )
        if kind == "insert_ticket":
            return sqlite_row(
                connect=lambda: sqlite3.connect(self.database),
                query="select version from tickets where id = ?",
                params=lambda c: [c.arguments["id"]],
                expected_version=1,
            )
        return http_status(url=lambda c: f"{c.arguments['base']}/pages/{c.arguments['slug']}")

    def delivered(self, kind: str, arguments: dict[str, Any]) -> bool:
        """The destination query a reconciling operator would run."""
        if kind == "write_report":
            return Path(arguments["path"]).exists()
        if kind == "insert_ticket":
            with sqlite3.connect(self.database) as connection:
                row = connection.execute(
                    "select 1 from tickets where id = ?", (arguments["id"],)
                ).fetchone()
            return row is not None
        return f"/pages/{arguments['slug']}" in self.target.pages

    def register(self, kind: str) -> None:
        for suffix in ("", "_broken", "_slow", "_stall"):
            register_verifier(f"{kind}{suffix}", self.verifier(kind), timeout=5)


KINDS = ("write_report", "insert_ticket", "publish_page")


@pytest.fixture
def world(tmp_path: Path, database: Path, publish_target: PublishTarget) -> World:
    return World(tmp_path, database, publish_target)


async def wait_for(pipeline: Pipeline, match: Callable[[ReadableSpan], bool]) -> ReadableSpan:
    """The exported span that matches, once every verifier delivered its receipt."""
    assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    found = [s for s in pipeline.spans() if match(s)]
    assert found, [s.name for s in pipeline.spans()]
    return found[-1]


def call_span(tool: str) -> Callable[[ReadableSpan], bool]:
    def match(span: ReadableSpan) -> bool:
        return span.name == f"tools/call {tool}"

    return match


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    try:
        return await client.call_tool(tool, arguments, read_timeout_seconds=TIMEOUT_S)
    except Exception as exc:  # the scenario's timeout, seen by the application as usual
        return exc


@pytest.mark.parametrize("kind", KINDS)
async def test_delivered_and_verified_is_healthy(
    instrumented: Pipeline, world: World, kind: str
) -> None:
    world.register(kind)
    async with Client(build_destination_server()) as client:
        await client.list_tools()
        result = await client.call_tool(kind, world.arguments(kind))
        assert result.is_error is False  # the application sees the tool's result, unchanged
    span = await wait_for(instrumented, call_span(kind))
    a = attrs(span)
    assert (a[A.OUTCOME_METHOD], a[A.OUTCOME_RESULT], a[A.OUTCOME_CONFIDENCE]) == (
        world.verifier(kind).method,
        "passed",
        1.0,
    )
    assert isinstance(a[A.OUTCOME_DURATION_S], float)
    assert (a[A.VERDICT], a[A.NEXT_ACTION]) == ("healthy", "none")
    assert a[A.CALL_FIRST_FAILED_LAYER] == "none"


@pytest.mark.parametrize("kind", KINDS)
async def test_claimed_but_not_delivered_is_false_success(
    instrumented: Pipeline, world: World, kind: str
) -> None:
    world.register(kind)
    async with Client(build_destination_server()) as client:
        await client.list_tools()
        result = await client.call_tool(f"{kind}_broken", world.arguments(kind))
        assert result.is_error is False
    a = attrs(await wait_for(instrumented, call_span(f"{kind}_broken")))
    assert a[A.OUTCOME_RESULT] == "failed"
    assert (a[A.VERDICT], a[A.NEXT_ACTION], a[A.CALL_FIRST_FAILED_LAYER]) == (
        "false_success",
        "verify_destination",
        "outcome",
    )


@pytest.mark.parametrize("kind", KINDS)
async def test_timeout_after_delivery_then_reconciled_present(
    instrumented: Pipeline, world: World, kind: str
) -> None:
    world.register(kind)
    arguments = world.arguments(kind)
    async with Client(build_destination_server()) as client:
        await client.list_tools()
        first = await call(client, f"{kind}_slow", arguments)
        assert isinstance(first, Exception)  # the application sees its own timeout, unchanged
        silent = attrs(instrumented.last(f"tools/call {kind}_slow"))
        assert (silent[A.VERDICT], silent[A.NEXT_ACTION]) == (
            "effect_unknown",
            "reconcile_before_retry",
        )
        assert silent[A.EFFECT_UNKNOWN] is True
        assert A.OUTCOME_RESULT not in silent  # no answer: nothing to verify yet

        await call(client, f"{kind}_slow", arguments)  # a retry before reconciling
        retry = attrs(instrumented.named(f"tools/call {kind}_slow")[-1])
        assert retry[A.RETRY_UNRECONCILED] is True

        assert world.delivered(kind, arguments)
        found = report_reconciliation(
            client, f"{kind}_slow", committed=True, method="idempotency_key", arguments=arguments
        )
        assert found is True
    reconcile = attrs(await wait_for(instrumented, lambda s: s.name == A.RECONCILE_SPAN_NAME))
    assert (reconcile[A.EFFECT_OBSERVED], reconcile[A.EFFECT_METHOD]) == (True, "idempotency_key")
    assert reconcile[A.OUTCOME_RESULT] == "passed"
    assert (reconcile[A.VERDICT], reconcile[A.NEXT_ACTION]) == ("healthy", "none")


@pytest.mark.parametrize("kind", KINDS)
async def test_timeout_without_delivery_then_reconciled_absent(
    instrumented: Pipeline, world: World, kind: str
) -> None:
    world.register(kind)
    arguments = world.arguments(kind)
    async with Client(build_destination_server()) as client:
        await client.list_tools()
        await call(client, f"{kind}_stall", arguments)
        assert attrs(instrumented.last(f"tools/call {kind}_stall"))[A.VERDICT] == "effect_unknown"
        assert not world.delivered(kind, arguments)
        assert report_reconciliation(client, f"{kind}_stall", committed=False) is True
        # Reconciled: the retry is no longer flagged.
        await call(client, f"{kind}_stall", arguments)
        assert A.RETRY_UNRECONCILED not in attrs(instrumented.last(f"tools/call {kind}_stall"))
    reconcile = attrs(instrumented.last(A.RECONCILE_SPAN_NAME))
    assert reconcile[A.EFFECT_OBSERVED] is False
    assert (reconcile[A.VERDICT], reconcile[A.NEXT_ACTION]) == (
        "tool_failed",
        "retry_within_budget",
    )


async def test_reconciled_present_but_destination_wrong_is_false_success(
    instrumented: Pipeline, world: World
) -> None:
    world.register("write_report")
    arguments = world.arguments("write_report")
    async with Client(build_destination_server()) as client:
        await client.list_tools()
        await call(client, "write_report_slow", arguments)
        await anyio.Path(arguments["path"]).write_text("tampered", encoding="utf-8")
        assert world.delivered("write_report", arguments)  # the effect is there...
        report_reconciliation(client, "write_report_slow", committed=True, arguments=arguments)
    reconcile = attrs(await wait_for(instrumented, lambda s: s.name == A.RECONCILE_SPAN_NAME))
    assert reconcile[A.OUTCOME_RESULT] == "failed"  # ...but not what was promised
    assert (reconcile[A.VERDICT], reconcile[A.NEXT_ACTION]) == (
        "false_success",
        "verify_destination",
    )


async def test_reconciled_present_without_verifier_is_unverified(
    instrumented: Pipeline, world: World
) -> None:
    arguments = world.arguments("insert_ticket")
    async with Client(build_destination_server()) as client:
        await client.list_tools()
        await call(client, "insert_ticket_slow", arguments)
        report_reconciliation(client, "insert_ticket_slow", committed=True)
    reconcile = attrs(instrumented.last(A.RECONCILE_SPAN_NAME))
    assert (reconcile[A.VERDICT], reconcile[A.NEXT_ACTION]) == (
        "unverified",
        "add_outcome_verifier",
    )


async def test_nothing_to_reconcile_returns_false(instrumented: Pipeline) -> None:
    async with Client(build_destination_server()) as client:
        assert report_reconciliation(client, "write_report_slow", committed=True) is False
    assert report_reconciliation(object(), "x", committed=False) is False


async def test_no_verifier_is_unverified_and_policy_is_healthy(
    instrumented: Pipeline, world: World
) -> None:
    outcome_not_required("publish_page")
    async with Client(build_destination_server()) as client:
        await client.list_tools()
        await client.call_tool("write_report", world.arguments("write_report"))
        await client.call_tool("publish_page", world.arguments("publish_page"))
    plain = attrs(instrumented.last("tools/call write_report"))
    assert (plain[A.VERDICT], plain[A.NEXT_ACTION]) == ("unverified", "add_outcome_verifier")
    policy = attrs(instrumented.last("tools/call publish_page"))
    assert policy[A.OUTCOME_METHOD] == "not_required"
    assert policy[A.VERDICT] == "healthy"


def _raises(call: Any) -> bool:
    raise RuntimeError("verifier bug with secret " + str(call.arguments))


def _hangs(call: Any) -> bool:
    import time

    time.sleep(3)
    return True


@pytest.mark.parametrize(
    ("verifier", "reason"),
    [
        (from_callable(_raises), "verifier_raised"),
        (from_callable(lambda c: {"not": "a receipt"}), "verifier_returned_garbage"),
        (_hangs, "verifier_timeout"),
    ],
    ids=["raises", "garbage", "hangs"],
)
async def test_broken_verifiers_never_affect_the_call(
    instrumented: Pipeline, world: World, verifier: Any, reason: str
) -> None:
    register_verifier("write_report", verifier, timeout=0.3)
    arguments = world.arguments("write_report")
    async with Client(build_destination_server()) as client:
        await client.list_tools()
        with anyio.fail_after(2):  # the verifier's 3 s hang never reaches the application
            result = await client.call_tool("write_report", arguments)
        assert result.is_error is False
        assert result.structured_content == {"delivered": True}
    a = attrs(await wait_for(instrumented, call_span("write_report")))
    assert (a[A.OUTCOME_RESULT], a[A.OUTCOME_REASON]) == ("inconclusive", reason)
    assert (a[A.VERDICT], a[A.NEXT_ACTION]) == ("unverified", "add_outcome_verifier")
    assert str(arguments["content"]) not in str(a)


async def test_outcome_metrics_give_both_rates_live(instrumented: Pipeline, world: World) -> None:
    """``mcp_health.outcomes`` carries seed 003's gap: envelopes vs verified receipts."""
    world.register("write_report")
    outcome_not_required("publish_page")
    async with Client(build_destination_server()) as client:
        await client.list_tools()
        await client.call_tool("write_report", world.arguments("write_report"))  # verified
        await client.call_tool("write_report_broken", world.arguments("write_report"))
        await client.call_tool("publish_page", world.arguments("publish_page"))  # policy only
        await call(client, "write_report_stall", world.arguments("write_report"))  # no envelope
        await call(client, "no_such_tool", {})  # JSON-RPC error: no envelope
    assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    points = instrumented.metric_points(A.METRIC_OUTCOMES)
    total = sum(p["value"] for p in points)
    envelopes = sum(p["value"] for p in points if p["attributes"][A.PROTOCOL_ENVELOPE] is True)
    verified = sum(
        p["value"]
        for p in points
        if p["attributes"][A.OUTCOME_RESULT] == "passed"
        and p["attributes"][A.OUTCOME_METHOD] != "not_required"
    )
    assert (total, envelopes, verified) == (5, 3, 1)
    assert {p["attributes"][A.OUTCOME_METHOD] for p in points} == {
        "file_digest",
        "not_required",
        "none",
    }
