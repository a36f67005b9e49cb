"""Sampling: the processor judges only the spans the sampler records.

The recommended setting is the SDK default, ``parentbased_always_on`` (sample downstream, in the
Collector, after the verdicts are attached). These tests run a real instrumented client against a
real in-process server under three samplers and show the three documented behaviours:

* always on: every call is judged on the whole session's evidence;
* a sampler that drops the discovery spans: verdicts get *more pessimistic* (missing evidence is
  never green), never falsely healthy;
* a sampler that returns ``RECORD_ONLY`` for spans it does not export: verdicts stay exact while
  the exporter still receives only the sampled spans.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from mcp import Client
from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
)
from opentelemetry.trace import Link, SpanKind
from opentelemetry.util.types import Attributes
from tests.integration.mcp_health_servers import build_server
from tests.support.processor_helpers import Pipeline, instrumenting

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio


class SkipDiscovery(Sampler):
    """Samples everything except ``tools/list`` spans, which get ``decision``."""

    def __init__(self, decision: Decision) -> None:
        self._decision = decision

    def should_sample(  # noqa: PLR0917 - the SDK's Sampler signature
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        decision = self._decision if name == "tools/list" else Decision.RECORD_AND_SAMPLE
        return SamplingResult(decision, attributes)

    def get_description(self) -> str:
        return f"SkipDiscovery({self._decision.name})"


async def run(sampler: Sampler) -> Pipeline:
    pipeline = Pipeline.build(sampler=sampler)
    with instrumenting(pipeline):
        async with Client(build_server(), mode="legacy") as client:
            first = await client.list_tools()
            await client.list_tools(cursor=first.next_cursor)
            await client.call_tool("lookup", {})
    return pipeline


def call_verdict(pipeline: Pipeline) -> tuple[Any, Any]:
    attrs = pipeline.last("tools/call lookup").attributes or {}
    return attrs[A.VERDICT], attrs[A.CATALOG_VERDICT]


async def test_recommended_parent_based_always_on_judges_every_call() -> None:
    pipeline = await run(ParentBased(ALWAYS_ON))
    assert call_verdict(pipeline) == ("unverified", "converged")
    assert len(pipeline.named("tools/list")) == 2


async def test_dropped_evidence_makes_verdicts_pessimistic_never_green() -> None:
    pipeline = await run(SkipDiscovery(Decision.DROP))
    assert pipeline.named("tools/list") == []
    assert call_verdict(pipeline) == ("stale_catalog", "unverifiable")


async def test_record_only_keeps_verdicts_exact_without_exporting_the_span() -> None:
    pipeline = await run(SkipDiscovery(Decision.RECORD_ONLY))
    assert pipeline.named("tools/list") == []  # not exported: the exporting processor drops them
    assert call_verdict(pipeline) == ("unverified", "converged")  # but the processor saw them
