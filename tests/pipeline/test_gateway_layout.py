"""The gateway layout on real collectors: agents' collector → load balancing by trace id → two
tail-sampling gateways → their tracing backends. Fed by ``otel-mcp-health demo``, whose sessions
each run under one root span (a trace of many spans that must meet at one gateway), and by an
agent making many one-span traces (which must spread over both gateways; the gateways keep every
healthy trace here, so that all of them reach a backend)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from tests.pipeline.pipeline_stack import ROOT, Timings, gateway_layout, http_get

pytestmark = pytest.mark.pipeline

HERE = Path(__file__).parent
FAST = Timings(spanmetrics_flush="1s", decision_wait="1s")
#: The demo's non-healthy verdicts, all of which tail sampling must keep.
DEMO_VERDICTS = {
    "false_success",
    "tool_failed",
    "protocol_error",
    "unverified",
    "stale_catalog",
    "needs_auth",
    "transport_error",
    "effect_unknown",
}


def _spans(path: Path) -> list[dict[str, object]]:
    spans: list[dict[str, object]] = []
    if not path.exists():
        return spans
    for line in path.read_text().splitlines():
        for resource in json.loads(line).get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                spans.extend(scope.get("spans", []))
    return spans


def _verdicts(spans: list[dict[str, object]]) -> set[str]:
    return set(
        re.findall(r'"mcp_health\.verdict", "value": \{"stringValue": "(\w+)"', json.dumps(spans))
    )


def test_traces_meet_at_one_gateway_and_every_incident_is_kept(tmp_path: Path) -> None:
    with gateway_layout(tmp_path, FAST, healthy_percent=100) as layout:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{layout.agent_otlp_http}"}
        demo = Path(sys.executable).with_name("otel-mcp-health")
        result = subprocess.run(
            [str(demo), "demo"], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr
        instrument = Path(sys.executable).with_name("opentelemetry-instrument")
        agent_env = {
            **os.environ,
            "OTEL_PYTHON_CONFIGURATOR": "mcp_health",
            "OTEL_SERVICE_NAME": "gateway-agent",
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{layout.agent_otlp_grpc}",
            # The agent registers no verifier: its policy makes its read-only lookups healthy.
            "OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES": str(HERE / "outcomes.toml"),
        }
        agent = [str(instrument), sys.executable, "-m", "tests.pipeline.agent_scenarios", "healthy"]
        result = subprocess.run(
            [*agent, "--seconds", "2"],
            cwd=ROOT,
            env=agent_env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            kept = [_spans(path) for path in layout.traces_files]
            if all(kept) and _verdicts([s for spans in kept for s in spans]) >= DEMO_VERDICTS:
                break
            time.sleep(0.5)
        metrics = http_get(layout.agent_metrics_url).decode()
    gateways_of_trace: defaultdict[str, set[int]] = defaultdict(set)
    spans_of_trace: defaultdict[str, int] = defaultdict(int)
    for n, spans in enumerate(kept):
        for span in spans:
            gateways_of_trace[str(span["traceId"])].add(n)
            spans_of_trace[str(span["traceId"])] += 1
    print(f"spans per gateway {[len(spans) for spans in kept]}, per trace {dict(spans_of_trace)}")
    # A session's trace holds many spans, and all of them met at one gateway.
    assert max(spans_of_trace.values()) >= 10
    assert all(len(gateways) == 1 for gateways in gateways_of_trace.values())
    # Many traces: both gateways got some.
    assert all(kept)
    assert _verdicts([s for spans in kept for s in spans]) >= DEMO_VERDICTS
    # The agents' collector made the verdict metrics from every span, before routing.
    assert "traces_span_metrics_calls_total{" in metrics
    assert 'mcp_health_verdict="false_success"' in metrics
    # The demo's own processor metrics arrived over OTLP too (its periodic reader, flushed at exit).
    assert "mcp_health_calls_total{" in metrics
    assert "mcp_health_catalog_verdicts_total{" in metrics
