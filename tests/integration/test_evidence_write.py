"""A request's evidence is written once, when it ends (docs/attributes.md): while its span is
open it carries its start attributes only; the hooks keep what they see on the request, and one
``set_attributes`` at its end writes the records built from it."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client, MCPError
from opentelemetry.sdk.trace import Span
from tests.integration.mcp_health_servers import build_server
from tests.integration.mcp_health_support import Captured

from otel_mcp_health import attributes as A
from otel_mcp_health.processor._spans import INSTRUMENTATION_SCOPE

pytestmark = pytest.mark.anyio


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, tuple[str, ...]]]:
    """Every attribute write on a span of ours after its start: (span name, call, keys)."""
    log: list[tuple[str, str, tuple[str, ...]]] = []
    set_attributes, set_attribute = Span.set_attributes, Span.set_attribute

    def ours(span: Span) -> bool:
        return span.instrumentation_scope is not None and (
            span.instrumentation_scope.name == INSTRUMENTATION_SCOPE
        )

    def spy_many(self: Span, attributes: Any) -> None:
        if ours(self):
            log.append((self.name, "set_attributes", tuple(attributes)))
        set_attributes(self, attributes)

    def spy_one(self: Span, key: str, value: Any) -> None:
        if ours(self):
            log.append((self.name, "set_attribute", (key,)))
        set_attribute(self, key, value)

    monkeypatch.setattr(Span, "set_attributes", spy_many)
    monkeypatch.setattr(Span, "set_attribute", spy_one)
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
