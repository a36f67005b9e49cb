"""End to end: ``otel-mcp-health probe`` on the real pipeline an operator runs.

Real MCP servers on 127.0.0.1 over stdio, streamable HTTP and SSE (``probe_fleet.py``): healthy
ones, ones answering 401 with ``WWW-Authenticate``, a closed port, one whose catalog changes after
it was pinned, one whose canary call answers ``isError``. A prober serves ``/probe`` for them;
the real Prometheus of the pipeline tests scrapes it through the multi-target relabeling block of
docs/probe.md (only the target names, the prober's address and the intervals changed), evaluates
collector/alerting/mcp-probe-rules.yml, and the real Alertmanager delivers each alert to its
owner's receiver. A second prober in scheduled mode exports OTLP to the bundled collector, whose
span metrics must carry the verdicts (and the agent-side rules alert on them).

Timings are shrunk as in test_end_to_end.py (1 s scrapes of the collector, ``for: 2s``); the
probes are scraped every few seconds, since a stdio probe starts a Python server.
"""

from __future__ import annotations

import copy
import json
import math
import re
import time
import tomllib
import urllib.error
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from tests.check.check_servers import CANARY_ARG as CHECK_CANARY_ARG
from tests.check.check_servers import CANARY_CURSOR as CHECK_CANARY_CURSOR
from tests.check.check_servers import TOKEN as SECURE_TOKEN
from tests.integration.mcp_health_servers import CANARIES
from tests.pipeline.pipeline_stack import (
    ALERTING_DIR,
    ROOT,
    Notification,
    Stack,
    Timings,
    http_get,
    stack,
)
from tests.pipeline.probe_fleet import (
    GATEWAY_SECRET,
    SECURE_TOKEN_VARIABLE,
    TOKEN_CANARY,
    TOKEN_VARIABLE,
    Fleet,
    change_catalog,
    fleet,
    pins_of,
    probe_config,
    prober,
    stdio_command,
)
from tests.pipeline.test_probe_static import PROBE_ROW, scrape_config_of_the_docs

pytestmark = pytest.mark.pipeline

FAST = Timings(
    scrape_s=1,
    window="20s",
    for_duration="2s",
    alertmanager_fast=True,
    spanmetrics_flush="1s",
    decision_wait="1s",
)
#: Prometheus's interval (and timeout) for /probe: a stdio probe spawns a Python server (~1.5 s).
PROBE_SCRAPE_S = 5
WAIT_S = 90.0
PROBE_RULES = ALERTING_DIR / "mcp-probe-rules.yml"
DASHBOARD = ROOT / "dashboards" / "mcp-health.json"
SCHEDULED_SERVICE = "otel-mcp-health-probe"
HEALTHY = ("healthy-stdio", "healthy-http", "healthy-sse")
#: A scrape target the prober's file does not have (a typo in Prometheus's config): refused.
NOT_IN_FILE = "not-in-the-file"
#: (alert, probed target) -> the receiver (webhook path) that must get it.
EXPECTED = {
    ("McpProbeTargetDown", "down"): "/platform",
    ("McpProbeNeedsAuth", "auth-http"): "/credential-holder",
    ("McpProbeNeedsAuth", "auth-sse"): "/credential-holder",
    ("McpProbeCatalogDrifted", "drifting"): "/catalog-reviewer",
    ("McpProbeCanaryFailed", "canary-error"): "/outcome-owner",
    ("McpProbeScrapeFailed", NOT_IN_FILE): "/platform",
}
LOOKUP = {"tool": "lookup", "arguments": {"q": CHECK_CANARY_ARG}, "verify": "not_required"}


#: The modules of examples/probe.toml (docs/probe.md quotes it), as shipped: default and
#: handshake_only.
SHIPPED_MODULES = tomllib.loads((ROOT / "examples" / "probe.toml").read_text())["module"]


def targets(servers: Fleet) -> list[dict[str, Any]]:
    """The scraped prober's targets: every case of the issue, over each transport."""
    bearer = {"Authorization": {"env": TOKEN_VARIABLE, "prefix": "Bearer "}}
    return [
        {
            "name": "healthy-stdio",
            "transport": "stdio",
            "command": stdio_command(),
            "canary": LOOKUP,
        },
        {
            "name": "healthy-http",
            "transport": "streamable_http",
            "url": f"{servers.stable_http}/mcp",
        },
        {
            "name": "healthy-sse",
            "transport": "sse",
            "url": f"{servers.gateway}/sse",
            "canary": LOOKUP,
        },
        {
            "name": "auth-http",
            "transport": "streamable_http",
            "url": f"{servers.stable_http}/authn",
            "headers": bearer,
        },
        {"name": "auth-sse", "transport": "sse", "url": f"{servers.gateway}/sse-authn"},
        {
            "name": "secure-http",
            "transport": "streamable_http",
            "url": f"{servers.check_http}/secure",
            "headers": {"Authorization": {"env": SECURE_TOKEN_VARIABLE, "prefix": "Bearer "}},
        },
        {
            "name": "down",
            "transport": "streamable_http",
            "url": f"http://127.0.0.1:{servers.closed_port}/mcp",
        },
        {"name": "drifting", "transport": "streamable_http", "url": f"{servers.drifting_http}/mcp"},
        {
            "name": "canary-error",
            "transport": "stdio",
            "command": stdio_command(),
            "canary": {"tool": "fail", "arguments": {}, "verify": "not_required"},
        },
    ]


def scheduled_targets(servers: Fleet) -> list[dict[str, Any]]:
    """The scheduled prober's targets (other names: its series must not raise the probe rules)."""
    return [
        {
            "name": "sched-healthy",
            "transport": "stdio",
            "command": stdio_command(),
            "canary": LOOKUP,
        },
        {
            "name": "sched-auth",
            "transport": "streamable_http",
            "url": f"{servers.stable_http}/authn",
            "headers": {"Authorization": {"env": TOKEN_VARIABLE, "prefix": "Bearer "}},
        },
        {
            "name": "sched-down",
            "transport": "streamable_http",
            "url": f"http://127.0.0.1:{servers.closed_port}/mcp",
        },
    ]


def scrape_jobs(prober_address: str, names: list[str]) -> list[dict[str, Any]]:
    """docs/probe.md's scrape jobs with this run's target names, prober address and intervals;
    nothing else changed."""
    jobs: list[dict[str, Any]] = copy.deepcopy(scrape_config_of_the_docs()["scrape_configs"])
    by_name = {job["job_name"]: job for job in jobs}
    probe, own = by_name["mcp-probe"], by_name["mcp-prober"]
    probe["static_configs"] = [{"targets": names}]
    probe["scrape_interval"] = probe["scrape_timeout"] = f"{PROBE_SCRAPE_S}s"
    (address,) = [r for r in probe["relabel_configs"] if r.get("target_label") == "__address__"]
    address["replacement"] = prober_address
    own["static_configs"] = [{"targets": [prober_address]}]
    return jobs


@dataclass
class ProbeRun:
    """What one pass produced, for the tests below to judge."""

    stack: Stack
    fleet: Fleet
    pins_error: str | None
    approved_before_change: bool = False
    all_fired: bool = False
    refusal: tuple[int, str] = (0, "")
    notifications: list[Notification] = field(default_factory=list)
    series: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    scheduled_verdicts: set[str] = field(default_factory=set)
    scheduled_success: dict[str, float] = field(default_factory=dict)
    dashboard: dict[str, dict[str, Any]] = field(default_factory=dict)
    healthy_alerts: list[Any] = field(default_factory=list)
    exported_text: str = ""
    traces_text: str = ""
    refused_total: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)


def _wait_until(done: Callable[[], bool]) -> bool:
    """Whether ``done()`` came true within ``WAIT_S``; a case that never comes true fails its own
    test below, not the whole run."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(0.5)
    return False


def _result(stack_: Stack, expr: str) -> list[dict[str, Any]]:
    answer = stack_.query(expr)
    assert answer.get("status") == "success", (expr, answer)
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def _firing(stack_: Stack) -> set[tuple[str, str]]:
    return {
        (n.alertname, n.labels.get("mcp_health_probe_target", ""))
        for n in stack_.sink.snapshot()
        if n.status == "firing"
    }


def _scheduled_verdicts(stack_: Stack) -> set[str]:
    expr = f'traces_span_metrics_calls_total{{service_name="{SCHEDULED_SERVICE}"}}'
    return {s["metric"].get("mcp_health_verdict", "") for s in _result(stack_, expr)} - {""}


def _dashboard_probe_queries() -> Iterator[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    for variable in dashboard["templating"]["list"]:
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", variable["query"]["query"])
        assert match
        if variable["name"] == "probe_target":
            yield f"variable {variable['name']}", f"count by ({match[2]}) ({match[1]})"
    inside = False
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            inside = panel["title"] == PROBE_ROW
        for target in panel.get("targets", []) if inside else []:
            expr = target["expr"].replace("$probe_target", ".*")
            yield f"panel {panel['title']!r} {target['refId']}", expr


def _refused(prober_url: str, requested: str) -> tuple[int, str]:
    url = f"{prober_url}/probe?" + urllib.parse.urlencode({"target": requested})
    try:
        body = http_get(url).decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    return 200, body


def _series_by_target(stack_: Stack) -> dict[str, list[dict[str, Any]]]:
    by_target: dict[str, list[dict[str, Any]]] = {}
    expr = '{job="mcp-probe", __name__=~"probe_.*|mcp_health_probe_.*"}'
    for sample in _result(stack_, expr):
        by_target.setdefault(sample["metric"]["mcp_health_probe_target"], []).append(sample)
    return by_target


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProbeRun]:
    started = time.monotonic()
    workdir = tmp_path_factory.mktemp("probe-pipeline")
    with fleet(workdir) as servers:
        probe: dict[str, Any] = {"min_interval": 1, "max_concurrent": 8}
        pins_error = None
        try:
            port = urllib.parse.urlsplit(servers.drifting_http).port or 0
            (workdir / "pins.toml").write_text(pins_of(f"{servers.drifting_http}/mcp", port))
            probe["pins"] = str(workdir / "pins.toml")
        except ImportError as exc:  # issue 28's pins not merged into this tree
            pins_error = f"the approved-catalog pins (issue 28) are missing: {exc}"
        config = workdir / "probe.toml"
        listed = targets(servers)
        config.write_text(probe_config(probe, SHIPPED_MODULES, listed))
        scheduled = workdir / "probe-scheduled.toml"
        scheduled.write_text(
            probe_config(
                {"min_interval": 1, "interval": 2},
                SHIPPED_MODULES,
                scheduled_targets(servers),
            )
        )
        secret_env = {TOKEN_VARIABLE: TOKEN_CANARY, SECURE_TOKEN_VARIABLE: SECURE_TOKEN}
        with prober(config, workdir / "prober.log", env=secret_env) as scraped:
            jobs = scrape_jobs(scraped.address, [*(t["name"] for t in listed), NOT_IN_FILE])
            with stack(
                workdir / "stack", FAST, extra_rules=(PROBE_RULES,), extra_scrape_configs=jobs
            ) as stack_:
                otlp = {
                    "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{stack_.otlp_http}",
                    "OTEL_METRIC_EXPORT_INTERVAL": "500",
                    "OTEL_BSP_SCHEDULE_DELAY": "200",
                    "OTEL_SERVICE_NAME": SCHEDULED_SERVICE,
                }
                log = workdir / "prober-scheduled.log"
                with prober(scheduled, log, schedule=True, env={**secret_env, **otlp}):
                    result = ProbeRun(stack=stack_, fleet=servers, pins_error=pins_error)
                    result.timings["stack_ready_s"] = time.monotonic() - started
                    yield from _drive(result, scraped.url, started)


def _drive(result: ProbeRun, prober_url: str, started: float) -> Iterator[ProbeRun]:
    stack_ = result.stack
    expected = {
        k: v for k, v in EXPECTED.items() if result.pins_error is None or k[1] != "drifting"
    }
    if result.pins_error is None:
        approved = (
            'mcp_health_probe_catalog_approval{mcp_health_probe_target="drifting",'
            'mcp_health_catalog_approval="approved"}'
        )
        result.approved_before_change = _wait_until(lambda: bool(_result(stack_, approved)))
        result.timings["approved_s"] = time.monotonic() - started
    change_catalog(f"{result.fleet.drifting_http}/mcp")
    result.refusal = _refused(prober_url, f"http://127.0.0.1:{result.fleet.closed_port}/mcp")

    def done() -> bool:
        credential = {
            n.labels.get("service_name")
            for n in stack_.sink.snapshot()
            if n.alertname == "McpNeedsAuth" and n.status == "firing"
        }
        return (
            _firing(stack_) >= set(expected)
            and SCHEDULED_SERVICE in credential
            and _scheduled_verdicts(stack_) >= {"healthy", "needs_auth", "transport_error"}
        )

    result.all_fired = _wait_until(done)
    result.timings["all_firing_s"] = time.monotonic() - started
    result.notifications = stack_.sink.snapshot()
    for note in result.notifications:  # when each alert first reached its receiver
        key = f"{note.alertname}/{note.labels.get('mcp_health_probe_target', '')}"
        result.timings.setdefault(key, round(note.at - started, 1))
    result.series = _series_by_target(stack_)
    result.scheduled_verdicts = _scheduled_verdicts(stack_)
    expr = f'probe_success{{service_name="{SCHEDULED_SERVICE}"}}'
    result.scheduled_success = {
        s["metric"]["mcp_health_probe_target"]: float(s["value"][1]) for s in _result(stack_, expr)
    }
    for name, query in _dashboard_probe_queries():
        result.dashboard[name] = stack_.query(query)
    healthy = "|".join(HEALTHY)
    result.healthy_alerts = _result(stack_, f'ALERTS{{mcp_health_probe_target=~"{healthy}"}}')
    everything = '{__name__=~".+"}'
    series = http_get(
        f"{stack_.prometheus_url}/api/v1/series?" + urllib.parse.urlencode({"match[]": everything})
    ).decode()
    traces = stack_.traces_file.read_text() if stack_.traces_file.exists() else ""
    result.traces_text = traces
    refused = _result(stack_, 'sum(mcp_health_prober_refused_total{job="mcp-prober"})')
    result.refused_total = float(refused[0]["value"][1]) if refused else 0.0
    logs = "".join(p.read_text() for p in stack_.workdir.parent.glob("prober*.log"))
    collector = http_get(stack_.collector_metrics_url).decode()
    result.exported_text = "\n".join((series, traces, logs, collector))
    result.timings["total_s"] = time.monotonic() - started
    print(f"\nprobe pipeline timings: {result.timings}")
    yield result


def _one(samples: list[dict[str, Any]], name: str) -> dict[str, str]:
    found = [s["metric"] for s in samples if s["metric"]["__name__"] == name]
    assert len(found) == 1, (name, found)
    return found[0]


def _value(samples: list[dict[str, Any]], name: str) -> float:
    return next(float(s["value"][1]) for s in samples if s["metric"]["__name__"] == name)


def test_each_expected_alert_fires_at_its_owners_receiver(run: ProbeRun) -> None:
    for (alert, target), receiver in EXPECTED.items():
        if target == "drifting" and run.pins_error:
            continue  # test_a_catalog_changed_after_pinning_drifts says why
        paths = {
            n.receiver_path
            for n in run.notifications
            if n.alertname == alert and n.labels.get("mcp_health_probe_target") == target
        }
        assert paths == {receiver}, (alert, target, paths)
    assert not [n for n in run.notifications if n.receiver_path == "/fallback"]


def test_no_alert_on_a_healthy_target(run: ProbeRun) -> None:
    assert run.healthy_alerts == []
    noted = [n for n in run.notifications if n.labels.get("mcp_health_probe_target") in HEALTHY]
    assert noted == []
    # and each probe alert names only its own target
    probe_alerts = {
        (n.alertname, n.labels.get("mcp_health_probe_target")) for n in run.notifications
    }
    probe_alerts = {a for a in probe_alerts if a[0].startswith("McpProbe")}
    assert probe_alerts <= set(EXPECTED)


def test_healthy_targets_read_healthy_over_stdio_http_and_sse(run: ProbeRun) -> None:
    for target in HEALTHY:
        samples = run.series[target]
        assert _value(samples, "probe_success") == 1, target
        session = _one(samples, "mcp_health_probe_session_verdict")
        assert session["mcp_health_call_first_failed_layer"] == "none", target
        catalog = _one(samples, "mcp_health_probe_catalog_verdict")
        assert catalog["mcp_health_catalog_verdict"] == "converged", target
    for target in ("healthy-stdio", "healthy-sse"):
        call = _one(run.series[target], "mcp_health_probe_call_verdict")
        assert (call["gen_ai_tool_name"], call["mcp_health_verdict"]) == ("lookup", "healthy")
    verdict = _one(run.series["healthy-http"], "mcp_health_probe_verdict")
    assert verdict["mcp_health_verdict"] == "converged"  # no canary: the session's readiness


def test_the_info_series_names_each_transport(run: ProbeRun) -> None:
    transports = {
        t: _one(run.series[t], "mcp_health_probe_catalog_info").get("network_transport")
        for t in HEALTHY
    }
    assert transports == {"healthy-stdio": "pipe", "healthy-http": "tcp", "healthy-sse": "tcp"}


def test_a_probe_sends_what_the_design_says(run: ProbeRun) -> None:
    """One handshake (server/discover, or initialize and its notification), every tools/list page
    (two for this server), the canary once."""
    sent = {
        s["metric"]["mcp_method_name"]: float(s["value"][1])
        for s in run.series["healthy-stdio"]
        if s["metric"]["__name__"] == "mcp_health_probe_requests"
    }
    handshake = {k: v for k, v in sent.items() if k not in ("tools/list", "tools/call")}
    assert handshake in ({"server/discover": 1}, {"initialize": 1, "notifications/initialized": 1})
    assert (sent["tools/list"], sent["tools/call"]) == (2, 1)


def test_a_401_with_www_authenticate_is_needs_auth_not_down(run: ProbeRun) -> None:
    for target in ("auth-http", "auth-sse"):
        samples = run.series[target]
        assert _value(samples, "probe_success") == 0
        session = _one(samples, "mcp_health_probe_session_verdict")
        assert session["mcp_health_verdict"] == "needs_auth", target
        assert session["mcp_health_call_first_failed_layer"] == "authorization", target
    fired = {
        n.alertname
        for n in run.notifications
        if "auth" in n.labels.get("mcp_health_probe_target", "")
    }
    assert fired == {"McpProbeNeedsAuth"}


def test_a_credential_by_reference_is_sent(run: ProbeRun) -> None:
    """``/secure`` answers 401 without its bearer token: converged means the prober read the
    reference and sent it (test_no_credential_... then finds it nowhere)."""
    samples = run.series["secure-http"]
    assert _value(samples, "probe_success") == 1
    assert _one(samples, "mcp_health_probe_session_verdict")["mcp_health_verdict"] == "converged"


def test_a_closed_port_is_down(run: ProbeRun) -> None:
    samples = run.series["down"]
    assert _value(samples, "probe_success") == 0
    session = _one(samples, "mcp_health_probe_session_verdict")
    assert session["mcp_health_verdict"] == "transport_error"
    assert session["mcp_health_call_first_failed_layer"] == "transport"
    assert session["mcp_health_reason"] == "connection_refused"


def test_a_catalog_changed_after_pinning_drifts(run: ProbeRun) -> None:
    assert run.pins_error is None, run.pins_error
    assert run.approved_before_change
    approval = _one(run.series["drifting"], "mcp_health_probe_catalog_approval")
    assert approval["mcp_health_catalog_approval"] == "drifted"
    assert approval["mcp_health_catalog_approval_reason"] == "tool_added"
    assert _value(run.series["drifting"], "mcp_health_probe_catalog_tools") == 4
    unpinned = _one(run.series["healthy-http"], "mcp_health_probe_catalog_approval")
    assert unpinned["mcp_health_catalog_approval"] == "unpinned"  # same server, another port


def test_a_canary_answering_iserror_fails_at_execution(run: ProbeRun) -> None:
    samples = run.series["canary-error"]
    assert _value(samples, "probe_success") == 0
    call = _one(samples, "mcp_health_probe_call_verdict")
    assert (call["gen_ai_tool_name"], call["mcp_health_verdict"]) == ("fail", "tool_failed")
    assert call["mcp_health_call_first_failed_layer"] == "execution"


def test_a_target_not_in_the_file_is_refused(run: ProbeRun) -> None:
    status, body = run.refusal
    assert status == 400
    assert str(run.fleet.closed_port) not in body
    # Prometheus's scrapes of a name the file lacks: refused (up 0, no probe series), counted.
    assert NOT_IN_FILE not in run.series
    assert run.refused_total >= 2


def test_scheduled_mode_reaches_the_collector_with_its_verdicts(run: ProbeRun) -> None:
    assert run.scheduled_verdicts >= {"healthy", "needs_auth", "transport_error"}
    assert run.scheduled_success == {"sched-healthy": 1, "sched-auth": 0, "sched-down": 0}
    # The agent-side rules alert on the probe's span metrics; the probe rules leave them alone.
    credential = [
        n
        for n in run.notifications
        if n.alertname == "McpNeedsAuth" and n.labels.get("service_name") == SCHEDULED_SERVICE
    ]
    assert credential
    assert {n.receiver_path for n in credential} == {"/credential-holder"}
    # One trace per probe: its root span reaches the tracing backend (kept: not healthy).
    assert '"name":"mcp_health.probe"' in run.traces_text
    scheduled = [
        n
        for n in run.notifications
        if n.labels.get("mcp_health_probe_target", "").startswith("sched-")
    ]
    assert scheduled == []


def test_every_dashboard_probe_query_returns_data(run: ProbeRun) -> None:
    failures = []
    for name, answer in run.dashboard.items():
        if answer.get("status") != "success":
            failures.append(f"{name}: {answer.get('error')}")
            continue
        values = [float(s["value"][1]) for s in answer["data"]["result"] if "value" in s]
        if not values or all(math.isnan(v) for v in values):
            failures.append(f"{name}: no data")
    assert not failures, failures
    assert len(run.dashboard) >= 7


def test_no_credential_argument_result_cursor_or_url_anywhere(run: ProbeRun) -> None:
    """Prometheus's every series, the kept traces, both probers' logs, the collector's metrics and
    every alert: no bearer token, argument, result, cursor, challenge text or target URL."""
    canaries = (
        TOKEN_CANARY,
        SECURE_TOKEN,
        CHECK_CANARY_ARG,
        CHECK_CANARY_CURSOR,
        GATEWAY_SECRET,
        SECURE_TOKEN_VARIABLE,
        *CANARIES,
        f"{run.fleet.stable_http}/authn",
        f"{run.fleet.gateway}/sse-authn",
        "sse-authn",
    )
    notes = json.dumps([[n.labels, n.annotations] for n in run.notifications])
    for text in (run.exported_text, notes):
        assert [c for c in canaries if c in text] == []
    assert TOKEN_VARIABLE not in notes
