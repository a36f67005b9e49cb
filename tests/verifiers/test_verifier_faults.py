"""Verifiers that raise anything, or return a malformed receipt, against real servers (issue 10).

* Every ``BaseException`` a verifier raises (``asyncio.CancelledError``, ``SystemExit``,
  ``KeyboardInterrupt``, ``GeneratorExit``, a custom one) gives an ``inconclusive`` receipt; the
  call's span ends, is exported and judged; ``flush_receipts`` then returns ``True`` at once.
* A receipt whose fields are not what :class:`Receipt` promises gets the reason
  ``verifier_malformed_receipt``, not ``no_outcome_verifier``.
* Logs carry the exception's type, never its message (which may quote the call's arguments).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from tests.support.processor_helpers import Pipeline
from tests.verifiers.delivery_server import CANARY_ARG, CANARY_RESULT, TOOL, build_server

from otel_mcp_health import Receipt, flush_receipts, register_verifier
from otel_mcp_health import attributes as A
from otel_mcp_health.core.vocabulary import OutcomeResult

pytestmark = pytest.mark.anyio
STDIO = StdioServerParameters(
    command=sys.executable, args=[str(Path(__file__).with_name("delivery_server.py"))]
)


class HostileError(BaseException):
    """A BaseException outside every standard family."""


RAISED: dict[str, Callable[[str], BaseException]] = {
    "cancelled": asyncio.CancelledError,
    "system_exit": SystemExit,
    "keyboard_interrupt": KeyboardInterrupt,
    "generator_exit": GeneratorExit,
    "custom": HostileError,
    "exception": RuntimeError,
}


async def call_once(pipeline: Pipeline, server: Any) -> dict[str, Any]:
    """One listed + called session; the call span's attributes once its receipt is in."""
    async with Client(server) as client:
        await client.list_tools()
        with anyio.fail_after(5):  # the verifier never reaches the application
            result = await client.call_tool(TOOL, {"secret": CANARY_ARG})
    assert (result.is_error, result.structured_content) == (False, {"id": CANARY_RESULT})
    started = time.monotonic()
    assert await anyio.to_thread.run_sync(flush_receipts, 5.0)
    assert time.monotonic() - started < 2.0
    spans = pipeline.named(f"tools/call {TOOL}")
    assert len(spans) == 1, [s.name for s in pipeline.spans()]
    return dict(spans[0].attributes or {})


@pytest.mark.parametrize("kind", sorted(RAISED))
async def test_any_base_exception_gives_a_receipt_and_ends_the_span(
    instrumented: Pipeline, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    def verifier(call: Any) -> bool:
        raise RAISED[kind](f"{CANARY_ARG} {call.arguments} {call.text}")

    register_verifier(TOOL, verifier, timeout=3.0)
    with caplog.at_level(logging.DEBUG):
        attrs = await call_once(instrumented, build_server())
    assert (attrs[A.OUTCOME_RESULT], attrs[A.OUTCOME_REASON]) == ("inconclusive", "verifier_raised")
    assert (attrs[A.VERDICT], attrs[A.NEXT_ACTION]) == ("unverified", "add_outcome_verifier")
    # the next call is judged too, and flushing stays prompt
    instrumented.exporter.clear()
    register_verifier(TOOL, lambda call: True, timeout=3.0)
    assert (await call_once(instrumented, build_server()))[A.VERDICT] == "healthy"
    logged = "\n".join(caplog.text.splitlines() + [str(r.exc_info) for r in caplog.records])
    assert type(RAISED[kind]("")).__qualname__ in logged
    assert CANARY_ARG not in logged
    assert CANARY_RESULT not in logged


async def test_cancelled_error_over_stdio(instrumented: Pipeline) -> None:
    def verifier(call: Any) -> bool:
        raise asyncio.CancelledError

    register_verifier(TOOL, verifier, timeout=3.0)
    attrs = await call_once(instrumented, STDIO)
    assert (attrs[A.OUTCOME_RESULT], attrs[A.OUTCOME_REASON]) == ("inconclusive", "verifier_raised")
    assert attrs[A.VERDICT] == "unverified"


MALFORMED: dict[str, Any] = {
    "result_is_a_string": Receipt("passed", "judge"),  # type: ignore[arg-type]
    "method_is_a_value": Receipt(OutcomeResult.PASSED, f"judge of {CANARY_ARG} at /tmp/x y"),
    "method_is_not_a_string": Receipt(OutcomeResult.PASSED, 42),  # type: ignore[arg-type]
    "reason_is_a_value": Receipt(OutcomeResult.FAILED, "judge", reason=f"wrong {CANARY_RESULT}"),
    "confidence_nan": Receipt(OutcomeResult.PASSED, "judge", confidence=float("nan")),
    "confidence_above_one": Receipt(OutcomeResult.PASSED, "judge", confidence=7.0),
    "confidence_a_string": Receipt(OutcomeResult.PASSED, "judge", confidence="high"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
async def test_a_malformed_receipt_says_so(instrumented: Pipeline, kind: str) -> None:
    register_verifier(TOOL, lambda call: MALFORMED[kind], timeout=3.0, method="judge")
    attrs = await call_once(instrumented, build_server())
    assert (attrs[A.OUTCOME_METHOD], attrs[A.OUTCOME_RESULT], attrs[A.OUTCOME_REASON]) == (
        "judge",
        "inconclusive",
        "verifier_malformed_receipt",
    )
    assert attrs[A.REASON] != "no_outcome_verifier"
    assert (attrs[A.VERDICT], attrs[A.NEXT_ACTION]) == ("unverified", "add_outcome_verifier")
    exported = str(attrs)
    assert CANARY_ARG not in exported
    assert CANARY_RESULT not in exported


async def test_a_well_formed_receipt_is_kept(instrumented: Pipeline) -> None:
    receipt = Receipt(OutcomeResult.FAILED, "llm_judge", confidence=0.5, reason="http_404")
    register_verifier(TOOL, lambda call: receipt, timeout=3.0)
    attrs = await call_once(instrumented, build_server())
    assert (attrs[A.OUTCOME_METHOD], attrs[A.OUTCOME_REASON]) == ("llm_judge", "http_404")
    assert (attrs[A.OUTCOME_CONFIDENCE], attrs[A.VERDICT]) == (0.5, "false_success")
