"""A request's evidence is written once, when it ends (docs/attributes.md): while its span is
open it carries its start attributes only; the hooks keep what they see on the request, and one
``set_attributes`` at its end writes the records built from it."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client, MCPError
from opentelemetry.sdk.trace import ReadableSpan, Span
from tests.integration.mcp_health_servers import build_server
from tests.integration.mcp_health_support import Captured

from otel_mcp_health import _sdkspan
from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import _request_hooks
from otel_mcp_health.processor._spans import INSTRUMENTATION_SCOPE

pytestmark = pytest.mark.anyio


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, tuple[str, ...]]]:
    """Every attribute write on a span of ours after its start: (span name, call, keys); a
    write straight into the SDK's store (``_sdkspan.write``) is one write, whichever way it
    goes."""
    log: list[tuple[str, str, tuple[str, ...]]] = []
    set_attributes, set_attribute, write = Span.set_attributes, Span.set_attribute, _sdkspan.write
    inside: list[bool] = []

    def ours(span: Span) -> bool:
        return not inside and (
            span.instrumentation_scope is not None
            and span.instrumentation_scope.name == INSTRUMENTATION_SCOPE
        )

    def spy_many(self: Span, attributes: Any) -> None:
        if ours(self):
            log.append((self.name, "set_attributes", tuple(attributes)))
        set_attributes(self, attributes)

    def spy_one(self: Span, key: str, value: Any) -> None:
        if ours(self):
            log.append((self.name, "set_attribute", (key,)))
        set_attribute(self, key, value)

    def spy_write(span: Span, attributes: Any) -> None:
        if ours(span):
            log.append((span.name, "set_attributes", tuple(attributes)))
        inside.append(True)
        try:
            write(span, attributes)
        finally:
            inside.pop()

    monkeypatch.setattr(Span, "set_attributes", spy_many)
    monkeypatch.setattr(Span, "set_attribute", spy_one)
    monkeypatch.setattr(_sdkspan, "write", spy_write)
    return log


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_each_request_writes_its_evidence_once(
    captured: Captured, writes: list[tuple[str, str, tuple[str, ...]]], mode: str
) -> None:
    async with Client(build_server(), mode=mode) as client:
        await client.list_tools()
        await client.call_tool("create_ticket", {"title": "t", "priority": "p"})
        await client.call_tool("fail", {})
        with pytest.raises(MCPError):
            await client.call_tool("bad_args", {"ticket": "x"})
    names = [name for name, _, _ in writes]
    assert sorted(names) == sorted(set(names)), writes  # one write per span
    assert {call for _, call, _ in writes} == {"set_attributes"}
    calls = {name: keys for name, _, keys in writes if name.startswith("tools/call")}
    assert set(calls) == {"tools/call create_ticket", "tools/call fail", "tools/call bad_args"}
    assert A.TRANSPORT_OUTCOME in calls["tools/call create_ticket"]
    assert A.CALL_IS_ERROR in calls["tools/call fail"]
    assert A.ERROR_TYPE in calls["tools/call bad_args"]
    spans = {span.name for span in captured.spans()}
    assert set(calls) <= spans


async def test_a_call_of_a_known_shape_gets_the_attributes_a_fresh_fold_gives(
    captured: Captured,
) -> None:
    """The records and request attributes of a ``tools/call`` are memoized by its shape: the
    second call of each shape (a hit) exports what the first (folded afresh) did, its own
    JSON-RPC id aside; one tool's calls that end differently (an answer, a timeout) never share."""
    _request_hooks._ENDED.clear()
    async with Client(build_server(), mode="legacy") as client:
        await client.list_tools()
        for seconds in (5, 6):  # not one call retried: a retry's span says so at its start
            await client.call_tool("slow", {"seconds": 0})
            with pytest.raises(MCPError):
                await client.call_tool("slow", {"seconds": seconds}, read_timeout_seconds=0.05)
            await client.call_tool("fail", {})
    assert len(_request_hooks._ENDED) == 3  # one shape each

    def evidence(span: ReadableSpan) -> dict[str, Any]:
        return {k: v for k, v in (span.attributes or {}).items() if k != A.JSONRPC_REQUEST_ID}

    spans = captured.named("tools/call slow")
    answered, timed_out = spans[0::2], spans[1::2]
    for fresh, memoized in (answered, timed_out, captured.named("tools/call fail")):
        assert evidence(memoized) == evidence(fresh), fresh.name
        ids = [span.attributes[A.JSONRPC_REQUEST_ID] for span in (fresh, memoized)]  # type: ignore[index]
        assert ids[0] != ids[1], fresh.name
    assert A.ERROR_TYPE not in evidence(answered[1])
    assert evidence(timed_out[1])[A.ERROR_TYPE] == "timeout"
    assert evidence(captured.named("tools/call fail")[1])[A.CALL_IS_ERROR] is True
