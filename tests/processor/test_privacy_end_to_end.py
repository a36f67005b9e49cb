"""SPEC §2 through the whole pipeline: instrumentation → processor → exporter, and its metrics.

The integration suite proves the instrumentation leaks nothing; this proves the processor's copies
(verdicts, incident keys, catalog digests, progress summaries) and the verdict metrics add nothing
that carries a canary either, on every scenario and transport.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.integration import scenarios
from tests.integration.mcp_health_servers import CANARIES, CANARY_ARG, build_server, serve_http
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio
STDIO_SERVER = str(Path(__file__).parent.parent / "integration" / "stdio_server.py")


async def test_no_canary_leaves_the_pipeline(instrumented: Pipeline) -> None:
    rec = scenarios.Recorder()
    await scenarios.inprocess(rec)
    async with serve_http(build_server()) as url:
        await scenarios.http(rec, url)
    await scenarios.stdio(rec, STDIO_SERVER)
    assert CANARY_ARG in repr(rec.outcomes)  # the canaries did reach the application

    spans = instrumented.spans()
    assert sum(1 for s in spans if A.VERDICT in (s.attributes or {})) > 10  # verdicts were added
    parts = [span.to_json() for span in spans]
    data = instrumented.reader.get_metrics_data()
    assert data is not None
    parts.append(data.to_json())
    exported = "\n".join(parts)
    assert [canary for canary in CANARIES if canary in exported] == []
    assert all(span.status.description is None for span in spans)
