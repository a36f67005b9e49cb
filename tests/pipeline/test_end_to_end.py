"""End to end on the real pipeline an operator runs.

Instrumented agents (``agent_scenarios.py``, zero-code set-up, real MCP servers) export OTLP to
the built collector running the bundled config; a real Prometheus scrapes it and evaluates the
bundled rules; a real Alertmanager delivers each alert to the webhook sink at its owner's
receiver; healthy calls follow and every alert resolves. The traces the collector keeps reach a
tracing backend (a second collector writing a file) with their verdicts and without any canary;
Prometheus holds no canary either; every dashboard query returns data from this Prometheus.

The shipped timings (15 s scrapes, a 10 m alert window, ``for`` of minutes) are shrunk for speed
(``FAST``); the rules, routes and collector config are otherwise the repository's own.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.integration.mcp_health_servers import CANARIES
from tests.pipeline.pipeline_stack import ROOT, Notification, Stack, Timings, http_get, stack

from otel_mcp_health.core.pins import PinFile, render_pins
from otel_mcp_health.demo._run import CANARY as DEMO_CANARY

pytestmark = pytest.mark.pipeline

#: Sent raw by a careless instrumentation (``_leaky_span``): the collector must scrub it.
LEAK_CANARY = "canary-leak-0d93e1"
ALL_CANARIES = (*CANARIES, DEMO_CANARY, LEAK_CANARY)
LEAKY_SPAN = "careless instrumentation"
HERE = Path(__file__).parent
FAST = Timings(
    scrape_s=1,
    window="20s",
    for_duration="2s",
    convergence_objective_le="1",  # the agent re-lists after 1.2 s
    alertmanager_fast=True,
    spanmetrics_flush="1s",
    decision_wait="1s",
)
#: Each alert the scenarios must raise, and the receiver (webhook path) that must get it.
EXPECTED_RECEIVER = {
    "McpNeedsAuth": "/credential-holder",
    "McpIncompatibleSession": "/integration-owner",
    "McpStaleCatalog": "/catalog-owner",
    "McpCatalogRefreshOverdue": "/agent-owner",
    "McpCatalogConvergenceSlow": "/catalog-owner",
    "McpProtocolError": "/client-implementer",
    "McpEffectUnknown": "/on-call-pager",
    "McpFalseSuccess": "/outcome-owner",
    "McpTransportErrorBudget": "/platform",
    "McpCallsStalled": "/platform",
}
#: Verdicts that tail sampling must keep, every one of them.
NON_HEALTHY = {
    "needs_auth",
    "incompatible_session",
    "stale_catalog",
    "protocol_error",
    "tool_failed",
    "false_success",
    "effect_unknown",
    "transport_error",
}
DASHBOARD = ROOT / "dashboards" / "mcp-health.json"
GRAFANA_MACROS = {"$__rate_interval": "1m", "$__range": "5m", "$__interval": "15s"}
WAIT_S = 90.0
AGENT = "pipeline-agent"


@dataclass
class Run:
    """What one pass through the pipeline produced, for the tests below to judge."""

    stack: Stack
    firing: list[Notification] = field(default_factory=list)
    resolved: list[Notification] = field(default_factory=list)
    all_notifications: list[Notification] = field(default_factory=list)
    dashboard_results: dict[str, dict[str, Any]] = field(default_factory=dict)
    metric_names: list[str] = field(default_factory=list)
    series_text: str = ""
    traces_text: str = ""
    healthy_in_metrics: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)


def _agent(stack_: Stack, group: str, *args: str, **env: str) -> subprocess.Popen[bytes]:
    """The agent, zero-code: its outcome verifiers come from the policy file, not from code."""
    instrument = Path(sys.executable).with_name("opentelemetry-instrument")
    log = (stack_.workdir / f"agent-{group}.log").open("wb")
    policy = {"OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES": str(HERE / "outcomes.toml")}
    return subprocess.Popen(
        [str(instrument), sys.executable, "-m", "tests.pipeline.agent_scenarios", group, *args],
        cwd=ROOT,
        env={**os.environ, **stack_.agent_env(AGENT), **policy, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def _finish(process: subprocess.Popen[bytes], stack_: Stack, group: str) -> None:
    try:
        process.wait(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log = (stack_.workdir / f"agent-{group}.log").read_text()
    assert process.returncode == 0, f"agent {group} failed:\n{log[-3000:]}"


def _wait_for(what: str, done: Callable[[], bool], stack_: Stack) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(0.5)
    seen = [(n.status, n.alertname, n.receiver_path) for n in stack_.sink.snapshot()]
    alerts = stack_.query('ALERTS{alertname=~"Mcp.*"}')
    pytest.fail(f"timed out waiting for {what}; notifications {seen}; ALERTS {alerts}")


def _alerts(stack_: Stack, status: str) -> set[str]:
    return {n.alertname for n in stack_.sink.snapshot() if n.status == status}


def _render(expr: str) -> str:
    for macro, value in GRAFANA_MACROS.items():
        expr = expr.replace(macro, value)
    return re.sub(r"\$\{?service\}?", ".*", expr)


def _dashboard_queries() -> Iterator[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    for variable in dashboard["templating"]["list"]:
        query = variable["query"]["query"]
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", query)
        assert match, query
        yield f"variable {variable['name']}", f"count by ({match[2]}) ({match[1]})"
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield f"panel {panel['title']!r} {target['refId']}", _render(target["expr"])


def _leaky_span(stack_: Stack) -> None:
    """Another instrumentation that records arguments, results, a header and error text."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    provider = TracerProvider(resource=Resource.create({"service.name": "careless-agent"}))
    exporter = OTLPSpanExporter(endpoint=stack_.otlp_grpc, insecure=True)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("careless").start_as_current_span(LEAKY_SPAN) as span:
        span.set_attributes(
            {
                "gen_ai.tool.call.arguments": f'{{"q": "{LEAK_CANARY}"}}',
                "gen_ai.tool.call.result": LEAK_CANARY,
                "gen_ai.input.messages": LEAK_CANARY,
                "http.request.header.authorization": f"Bearer {LEAK_CANARY}",
                "gen_ai.tool.name": "lookup",
            }
        )
        span.record_exception(ValueError(f"bad ticket {LEAK_CANARY}"))
        span.set_status(Status(StatusCode.ERROR, f"failed for {LEAK_CANARY}"))
    provider.shutdown()


def _canary_free(text: str) -> list[str]:
    return [canary for canary in ALL_CANARIES if canary in text]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    started = time.monotonic()
    with stack(tmp_path_factory.mktemp("pipeline"), FAST) as stack_:
        result = Run(stack=stack_, timings={"stack_ready_s": stack_.started_in_s})
        # The stalled call hangs for seconds: idle past this window without progress.
        incidents = _agent(stack_, "incidents", OTEL_INSTRUMENTATION_MCP_HEALTH_IDLE_WINDOW_S="0.5")
        incompatible = _agent(
            stack_,
            "incompatible",
            OTEL_INSTRUMENTATION_MCP_HEALTH_SUPPORTED_VERSIONS="2024-11-05",
        )
        # A catalog older than the maximum age (1 s here) with nobody able to hear a change. Its
        # agent has an approved catalog that pins no server of it: its discoveries count as
        # unpinned (the approval panel's data; test_approval_alert.py drives the drift alert).
        pins = stack_.workdir / "approved-catalog.toml"
        pins.write_text(render_pins(PinFile(())), encoding="utf-8")
        overdue = _agent(
            stack_,
            "never_refreshes",
            "--seconds",
            "4",
            OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S="1",
            OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG=str(pins),
        )
        _finish(incompatible, stack_, "incompatible")
        _finish(overdue, stack_, "never_refreshes")
        _wait_for(
            "every alert firing",
            lambda: _alerts(stack_, "firing") >= set(EXPECTED_RECEIVER),
            stack_,
        )
        result.timings["all_firing_s"] = time.monotonic() - started
        # While the incidents are open, every dashboard query must return data.
        for name, expr in _dashboard_queries():
            result.dashboard_results[name] = stack_.query(expr)
        _finish(incidents, stack_, "incidents")
        _leaky_span(stack_)
        healthy = _agent(stack_, "healthy", "--seconds", "6")
        _finish(healthy, stack_, "healthy")
        _wait_for(
            "every alert resolved",
            lambda: _alerts(stack_, "resolved") >= set(EXPECTED_RECEIVER),
            stack_,
        )
        result.timings["all_resolved_s"] = time.monotonic() - started
        notes = stack_.sink.snapshot()
        result.all_notifications = notes
        result.firing = [n for n in notes if n.status == "firing"]
        result.resolved = [n for n in notes if n.status == "resolved"]
        names = json.loads(http_get(f"{stack_.prometheus_url}/api/v1/label/__name__/values"))
        result.metric_names = sorted(names["data"])
        result.series_text = http_get(
            f"{stack_.prometheus_url}/api/v1/series?match[]=%7B__name__%3D~%22.%2B%22%7D"
        ).decode()
        answer = stack_.query(
            f'sum(traces_span_metrics_calls_total{{mcp_health_verdict="healthy",'
            f'service_name="{AGENT}"}})'
        )
        result.healthy_in_metrics = float(answer["data"]["result"][0]["value"][1])

        def traces_hold_every_verdict() -> bool:
            text = stack_.traces_file.read_text() if stack_.traces_file.exists() else ""
            verdicts = re.findall(r'"mcp_health\.verdict","value":\{"stringValue":"(\w+)"', text)
            return set(verdicts) >= NON_HEALTHY and LEAKY_SPAN in text

        _wait_for("the kept traces at the backend", traces_hold_every_verdict, stack_)
        result.traces_text = stack_.traces_file.read_text()
        result.timings["total_s"] = time.monotonic() - started
        print(f"\npipeline timings: {result.timings}")
        print("metric names in Prometheus:", ", ".join(result.metric_names))
        for note in result.firing:
            print(f"fired {note.alertname} -> {note.receiver_path} {note.labels}")
        yield result


def test_each_alert_fires_at_its_owners_receiver(run: Run) -> None:
    for alert, receiver in EXPECTED_RECEIVER.items():
        paths = {n.receiver_path for n in run.firing if n.alertname == alert}
        assert paths == {receiver}, (alert, paths)
    assert not [n for n in run.all_notifications if n.receiver_path == "/fallback"]


def test_alerts_carry_what_their_owner_needs_and_no_secret(run: Run) -> None:
    by_name = {n.alertname: n for n in run.firing}
    auth = by_name["McpNeedsAuth"]
    # An array attribute becomes a JSON label: the scope, never the bearer token.
    assert json.loads(auth.labels["mcp_health_auth_required_scopes"]) == ["tickets:write", "admin"]
    assert auth.labels["mcp_health_auth_error"] == "insufficient_scope"
    assert auth.labels["service_name"] == AGENT
    assert auth.labels["server_address"] == "127.0.0.1"
    incompatible = by_name["McpIncompatibleSession"].labels
    assert incompatible["mcp_protocol_version"] not in ("", "2024-11-05")
    assert incompatible["mcp_health_server_version"] == "1.2.3"
    protocol = by_name["McpProtocolError"].labels
    assert (protocol["mcp_method_name"], protocol["gen_ai_tool_name"]) == ("tools/call", "bad_args")
    assert protocol["error_type"]
    assert by_name["McpFalseSuccess"].labels["mcp_health_outcome_result"] == "failed"
    assert by_name["McpEffectUnknown"].labels["gen_ai_tool_name"] == "publish_slow"
    assert by_name["McpEffectUnknown"].labels["severity"] == "page"
    # an agent that never re-lists is not the server's change: its own, lower-severity alert
    overdue = by_name["McpCatalogRefreshOverdue"].labels
    assert (overdue["owner"], overdue["severity"]) == ("agent_owner", "info")
    stale = by_name["McpStaleCatalog"].labels
    assert stale["mcp_health_reason"] == "catalog_signal_after_discovery"
    for note in run.all_notifications:
        assert not _canary_free(json.dumps([note.labels, note.annotations])), note


def test_one_alert_per_incident_not_per_attempt(run: Run) -> None:
    # The stale catalog was hit twice, the closed port three times, the incompatible session at
    # its handshake and its call: still one alert each.
    firing = {(n.alertname, tuple(sorted(n.labels.items()))) for n in run.firing}
    for alert in (
        "McpStaleCatalog",
        "McpCatalogRefreshOverdue",
        "McpTransportErrorBudget",
        "McpIncompatibleSession",
    ):
        assert len([f for f in firing if f[0] == alert]) == 1, alert


def test_every_alert_resolves_once_healthy_calls_follow(run: Run) -> None:
    for alert, receiver in EXPECTED_RECEIVER.items():
        paths = {n.receiver_path for n in run.resolved if n.alertname == alert}
        assert paths == {receiver}, (alert, paths)
    assert run.timings["all_resolved_s"] < 150


def test_stalled_is_the_only_in_flight_state_that_alerts(run: Run) -> None:
    stalled = [n for n in run.firing if n.alertname == "McpCallsStalled"]
    assert stalled
    assert all("waiting_for_user" not in json.dumps(n.labels) for n in stalled)


def test_every_dashboard_query_returns_data(run: Run) -> None:
    failures = []
    for name, answer in run.dashboard_results.items():
        if answer.get("status") != "success":
            failures.append(f"{name}: {answer.get('error')}")
            continue
        values = [
            float(sample["value"][1]) for sample in answer["data"]["result"] if "value" in sample
        ]
        if not values or all(math.isnan(v) for v in values):
            failures.append(f"{name}: no data")
    assert not failures, failures
    assert len(run.dashboard_results) >= 12


def test_kept_traces_carry_the_verdicts_and_no_canary(run: Run) -> None:
    verdicts = set(
        re.findall(r'"mcp_health\.verdict","value":\{"stringValue":"(\w+)"', run.traces_text)
    )
    assert verdicts >= NON_HEALTHY
    assert not _canary_free(run.traces_text)


def test_the_collector_scrubs_what_a_careless_instrumentation_sends(run: Run) -> None:
    spans = [
        span
        for line in run.traces_text.splitlines()
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
        if span["name"] == LEAKY_SPAN
    ]
    assert len(spans) == 1  # kept: its status is an error
    (span,) = spans
    keys = {attribute["key"] for attribute in span["attributes"]}
    assert keys == {"gen_ai.tool.name"}
    (event,) = span["events"]
    event_keys = {a["key"] for a in event["attributes"]}
    assert "exception.type" in event_keys
    assert not event_keys & {"exception.message", "exception.stacktrace"}
    assert span["status"].get("message", "") == ""
    assert span["status"]["code"] == 2  # the error itself is kept
    assert LEAK_CANARY not in run.traces_text


def test_tail_sampling_keeps_only_a_share_of_healthy_traces(run: Run) -> None:
    # Span metrics count every span before sampling; the backend gets a share of the healthy.
    kept = len(
        re.findall(r'"mcp_health\.verdict","value":\{"stringValue":"healthy"', run.traces_text)
    )
    assert run.healthy_in_metrics >= 20
    assert kept < run.healthy_in_metrics


def test_prometheus_holds_the_verdict_metrics_and_no_canary(run: Run) -> None:
    for name in (
        "traces_span_metrics_calls_total",
        "traces_span_metrics_duration_milliseconds_bucket",
        "mcp_health_calls_total",
        "mcp_health_incidents_total",
        "mcp_health_outcomes_total",
        "mcp_health_catalog_verdicts_total",
        "mcp_health_calls_in_flight",
        "mcp_health_catalog_convergence_lag_seconds_bucket",
        "mcp_health_catalog_approvals_total",
    ):
        assert name in run.metric_names, name
    assert "mcp_health_verdict" in run.series_text
    assert not _canary_free(run.series_text)
