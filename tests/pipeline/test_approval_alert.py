"""Approved catalogs end to end on the operator's pipeline (docs/attributes.md#approved-catalogs).

A zero-code instrumented agent (``approval_scenarios.py``) with
``OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG`` naming a pin file of the reviewed catalog
discovers real MCP servers whose tools changed since (``tests/integration/approval_servers.py``)
and exports OTLP to the built collector running the bundled config; a real Prometheus scrapes it
and evaluates the bundled rules; a real Alertmanager routes by the bundled config to the webhook
sink. ``McpCatalogChangedMaterially`` must fire at ``/catalog-reviewer`` for each server whose
tools changed materially or gained a tool, and for none whose change is cosmetic (``title``), a
removal, or nothing; the calls of the unapproved tools must not raise ``McpStaleCatalog``. After
the changes are accepted (the pins rewritten from what the servers now serve) the alerts resolve;
a corrupt pin file then fails closed: every server's alert, reason ``pins_unreadable``.
No description, schema or pin-file path reaches Prometheus, the collector's metrics, an alert or
a kept trace. Timings are shrunk as in ``test_end_to_end.py`` (``FAST``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.integration.approval_servers import (
    CANARIES,
    CANARY_PIN_PATH,
    CHANGES,
    base_tools,
    server_name,
    tools,
    wire,
)
from tests.pipeline.pipeline_stack import ROOT, Notification, Stack, http_get, stack
from tests.pipeline.test_end_to_end import FAST

from otel_mcp_health import attributes as A
from otel_mcp_health.core.pins import PinFile, pin_server, render_pins

pytestmark = pytest.mark.pipeline

ALERT = "McpCatalogChangedMaterially"
RECEIVER = "/catalog-reviewer"
AGENT = "approval-agent"
#: Each change and the alert's reason label, for the changes that must fire.
DRIFTED = {
    server_name("description"): "material_change",
    server_name("schema"): "material_change",
    server_name("added"): "tool_added",
}
#: Discovered, counted, and silent: a cosmetic change, a removal, no change, no pins.
SILENT = {
    server_name("title"): "approved",
    server_name("removed"): "approved",
    server_name("unchanged"): "approved",
    "approval-unpinned": "unpinned",
}
#: Every server the agent discovers: with an unreadable pin file, each reads drifted.
EVERY_SERVER = {server_name(change) for change in CHANGES} | {"approval-unpinned"}
WAIT_S = 90.0
#: Rule evaluations (1 s each in FAST) to let pass before calling an alert absent.
SETTLE_S = 6.0


@dataclass
class Run:
    """What the pipeline produced, read while the drift was open and after it was accepted."""

    stack: Stack
    firing: list[Notification] = field(default_factory=list)
    resolved: list[Notification] = field(default_factory=list)
    all_notifications: list[Notification] = field(default_factory=list)
    approvals_while_drifted: dict[tuple[str, str], float] = field(default_factory=dict)
    approvals_after_accept: dict[tuple[str, str], float] = field(default_factory=dict)
    unapproved_calls: list[dict[str, Any]] = field(default_factory=list)
    alerts_while_drifted: list[dict[str, Any]] = field(default_factory=list)
    panel: dict[str, Any] = field(default_factory=dict)
    series_text: str = ""
    collector_metrics: str = ""
    traces_text: str = ""
    agent_logs: str = ""
    unreadable: list[Notification] = field(default_factory=list)
    corrupt_log: str = ""
    timings: dict[str, float] = field(default_factory=dict)


def _write_pins(directory: Path, catalog: Callable[[str], list[Any]]) -> Path:
    """Pins of every pinned server (not the unpinned one), under a directory named by a canary:
    the path must never be exported."""
    servers = [
        pin_server(wire(catalog(change)), name=server_name(change), source="live")
        for change in CHANGES
    ]
    folder = directory / CANARY_PIN_PATH
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "approved-catalog.toml"
    path.write_text(render_pins(PinFile(tuple(servers))), encoding="utf-8")
    return path


def _agent(stack_: Stack, pins: Path, name: str) -> None:
    instrument = Path(sys.executable).with_name("opentelemetry-instrument")
    log = stack_.workdir / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                str(instrument),
                sys.executable,
                "-m",
                "tests.pipeline.approval_scenarios",
                "--seconds",
                "3",
            ],
            cwd=ROOT,
            env={
                **os.environ,
                **stack_.agent_env(AGENT),
                "OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG": str(pins),
            },
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            process.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    text = log.read_text()
    assert process.returncode == 0, f"agent {name} failed:\n{text[-3000:]}"


def _wait_for(what: str, done: Callable[[], bool], stack_: Stack) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(0.5)
    seen = [(n.status, n.alertname, n.receiver_path, n.labels) for n in stack_.sink.snapshot()]
    alerts = stack_.query('ALERTS{alertname=~"Mcp.*"}')
    pytest.fail(f"timed out waiting for {what}; notifications {seen}; ALERTS {alerts}")


def _servers(stack_: Stack, status: str) -> set[str]:
    return {
        n.labels.get("mcp_health_server_name", "")
        for n in stack_.sink.snapshot()
        if n.alertname == ALERT and n.status == status
    }


def _unreadable(notes: list[Notification]) -> set[str]:
    return {
        n.labels.get("mcp_health_server_name", "")
        for n in notes
        if n.alertname == ALERT
        and n.status == "firing"
        and n.labels.get("mcp_health_catalog_approval_reason") == "pins_unreadable"
    }


def _approvals(stack_: Stack) -> dict[tuple[str, str], float]:
    answer = stack_.query(
        f"sum by (mcp_health_server_name, mcp_health_catalog_approval) "
        f'(mcp_health_catalog_approvals_total{{service_name="{AGENT}"}})'
    )
    return {
        (r["metric"]["mcp_health_server_name"], r["metric"]["mcp_health_catalog_approval"]): float(
            r["value"][1]
        )
        for r in answer["data"]["result"]
    }


def _every_server_counted(stack_: Stack) -> bool:
    seen = _approvals(stack_)
    expected = {(name, "drifted") for name in DRIFTED} | set(SILENT.items())
    return expected <= set(seen)


def _panel_query() -> str:
    dashboard = json.loads((ROOT / "dashboards" / "mcp-health.json").read_text())
    (panel,) = [p for p in dashboard["panels"] if p["title"] == "Catalog approval per server"]
    (target,) = panel["targets"]
    return target["expr"].replace("$__rate_interval", "5m").replace('"$service"', f'"{AGENT}"')


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    started = time.monotonic()
    workdir = tmp_path_factory.mktemp("approval-pipeline")
    reviewed = _write_pins(workdir / "reviewed", lambda _change: base_tools())
    with stack(workdir / "stack", FAST) as stack_:
        result = Run(stack=stack_, timings={"stack_ready_s": stack_.started_in_s})
        _agent(stack_, reviewed, "agent-drifted")
        _wait_for(
            "every server's approval in Prometheus", lambda: _every_server_counted(stack_), stack_
        )
        _wait_for(
            f"{ALERT} for every drifted server",
            lambda: _servers(stack_, "firing") >= set(DRIFTED),
            stack_,
        )
        result.timings["drift_firing_s"] = time.monotonic() - started
        # The cosmetic, removed, unchanged and unpinned series are in Prometheus (above) and the
        # stale-catalog calls too: let the rules evaluate them long past McpStaleCatalog's `for`.
        time.sleep(SETTLE_S)
        result.approvals_while_drifted = _approvals(stack_)
        result.alerts_while_drifted = stack_.query('ALERTS{alertname=~"Mcp.*"}')["data"]["result"]
        result.unapproved_calls = stack_.query(
            f'traces_span_metrics_calls_total{{service_name="{AGENT}",'
            f'mcp_health_verdict="stale_catalog"}}'
        )["data"]["result"]
        result.panel = stack_.query(_panel_query())
        # The reviewer accepts the changes: the pins are rewritten from what the servers serve.
        accepted = _write_pins(workdir / "accepted", tools)
        _agent(stack_, accepted, "agent-accepted")
        _wait_for(
            f"{ALERT} resolved for every drifted server",
            lambda: _servers(stack_, "resolved") >= set(DRIFTED),
            stack_,
        )
        result.timings["resolved_s"] = time.monotonic() - started
        result.approvals_after_accept = _approvals(stack_)
        notes = stack_.sink.snapshot()
        result.all_notifications = notes
        result.firing = [n for n in notes if n.status == "firing"]
        result.resolved = [n for n in notes if n.status == "resolved"]
        # The pin file gets corrupted: every server the agent discovers reads drifted (fail
        # closed), the reviewer hears it, and the file's path stays on the local stderr.
        corrupt = workdir / "corrupt" / CANARY_PIN_PATH / "approved-catalog.toml"
        corrupt.parent.mkdir(parents=True)
        corrupt.write_text('format = "otel-mcp-health/pins/1"\n[[server]\n', encoding="utf-8")
        _agent(stack_, corrupt, "agent-corrupt")
        _wait_for(
            f"{ALERT} with reason pins_unreadable for every server",
            lambda: _unreadable(stack_.sink.snapshot()) >= EVERY_SERVER,
            stack_,
        )
        result.timings["unreadable_firing_s"] = time.monotonic() - started
        result.unreadable = [
            n for n in stack_.sink.snapshot()[len(notes) :] if n.alertname == ALERT
        ]
        result.corrupt_log = (stack_.workdir / "agent-corrupt.log").read_text()
        result.series_text = http_get(
            f"{stack_.prometheus_url}/api/v1/series?match[]=%7B__name__%3D~%22.%2B%22%7D"
        ).decode()
        result.collector_metrics = http_get(stack_.collector_metrics_url).decode()

        def drifted_trace_kept() -> bool:
            text = stack_.traces_file.read_text() if stack_.traces_file.exists() else ""
            return f'"{A.CATALOG_APPROVAL}","value":{{"stringValue":"drifted"' in text

        _wait_for("a drifted discovery's trace at the backend", drifted_trace_kept, stack_)
        result.traces_text = stack_.traces_file.read_text()
        result.agent_logs = "".join(
            (stack_.workdir / f"{name}.log").read_text()
            for name in ("agent-drifted", "agent-accepted", "agent-corrupt")
        )
        result.timings["total_s"] = time.monotonic() - started
        print(f"\napproval pipeline timings: {result.timings}")
        for note in result.firing:
            print(f"fired {note.alertname} -> {note.receiver_path} {note.labels}")
        yield result


def test_a_material_change_fires_at_the_catalog_reviewer(run: Run) -> None:
    drift = [n for n in run.firing if n.alertname == ALERT]
    assert {n.receiver_path for n in drift} == {RECEIVER}
    reasons = {
        n.labels["mcp_health_server_name"]: n.labels["mcp_health_catalog_approval_reason"]
        for n in drift
    }
    assert reasons == DRIFTED
    for note in drift:
        assert (note.labels["owner"], note.labels["severity"]) == ("catalog_reviewer", "critical")
        assert note.labels["service_name"] == AGENT
    # The server reached over streamable HTTP is named by its address and port too.
    (http,) = [n for n in drift if n.labels["mcp_health_server_name"] == server_name("description")]
    assert http.labels["server_address"] == "127.0.0.1"
    assert http.labels["server_port"].isdigit()
    assert not [n for n in run.all_notifications if n.receiver_path == "/fallback"]


def test_a_cosmetic_change_a_removal_or_no_pins_never_fires(run: Run) -> None:
    # Each of them was discovered and counted under its verdict (so silence is not missing data).
    for name, approval in SILENT.items():
        assert run.approvals_while_drifted.get((name, approval), 0) >= 1, (
            name,
            run.approvals_while_drifted,
        )
        assert (name, "drifted") not in run.approvals_while_drifted
    fired = {
        n.labels.get("mcp_health_server_name")
        for n in run.all_notifications
        if n.alertname == ALERT
    }
    assert not fired & set(SILENT)
    active = {
        a["metric"].get("mcp_health_server_name")
        for a in run.alerts_while_drifted
        if a["metric"]["alertname"] == ALERT
    }
    assert active == set(DRIFTED)


def test_unapproved_calls_go_to_the_reviewer_not_the_stale_catalog_owner(run: Run) -> None:
    reasons = {
        (
            c["metric"].get("mcp_health_server_name"),
            c["metric"].get("mcp_health_reason"),
            c["metric"].get("mcp_health_next_action"),
        )
        for c in run.unapproved_calls
    }
    # The calls of the changed and the added tools read stale_catalog / tool_unapproved ...
    assert {name for name, reason, _ in reasons if reason == "tool_unapproved"} == set(DRIFTED)
    assert {action for _, reason, action in reasons if reason == "tool_unapproved"} == {
        "review_catalog_change"
    }
    # ... and, their next action being a review, raise no McpStaleCatalog (its `for` elapsed).
    assert not [n for n in run.all_notifications if n.alertname == "McpStaleCatalog"]
    assert not [
        a for a in run.alerts_while_drifted if a["metric"]["alertname"] == "McpStaleCatalog"
    ]


def test_accepting_the_changes_resolves_the_alert(run: Run) -> None:
    resolved = {n.labels["mcp_health_server_name"] for n in run.resolved if n.alertname == ALERT}
    assert resolved == set(DRIFTED)
    assert {n.receiver_path for n in run.resolved if n.alertname == ALERT} == {RECEIVER}
    for name in DRIFTED:  # the rewritten pins approve what the server now serves
        assert run.approvals_after_accept.get((name, "approved"), 0) >= 1, name
        drifted = run.approvals_after_accept[(name, "drifted")]
        assert drifted == run.approvals_while_drifted[(name, "drifted")]  # no drift since


def test_the_dashboard_panel_shows_approval_per_server(run: Run) -> None:
    assert run.panel["status"] == "success"
    shown = {
        (r["metric"].get("mcp_health_server_name"), r["metric"].get("mcp_health_catalog_approval"))
        for r in run.panel["data"]["result"]
    }
    assert {(name, "drifted") for name in DRIFTED} | set(SILENT.items()) <= shown


def test_the_collector_keeps_the_drifted_discovery_span_with_its_tool_names(run: Run) -> None:
    spans = [
        {a["key"]: a["value"] for a in span["attributes"]}
        for line in run.traces_text.splitlines()
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    ]
    drifted = [s for s in spans if s.get(A.CATALOG_APPROVAL) == {"stringValue": "drifted"}]
    named = {
        value["stringValue"]
        for span in drifted
        for value in span.get(A.CATALOG_APPROVAL_MATERIAL_TOOLS, {})
        .get("arrayValue", {})
        .get("values", [])
    }
    assert "read_file" in named


def test_no_description_schema_or_pin_path_leaves_the_process(run: Run) -> None:
    exported = {
        "prometheus series": run.series_text,
        "collector metrics": run.collector_metrics,
        "kept traces": run.traces_text,
        "alerts": json.dumps(
            [[n.labels, n.annotations] for n in (*run.all_notifications, *run.unreadable)]
        ),
    }
    assert "mcp_health_catalog_approvals_total" in run.collector_metrics
    for where, text in exported.items():
        for canary in CANARIES:
            assert canary not in text, (where, canary)


def test_an_unreadable_pin_file_fails_closed_and_reaches_the_reviewer(run: Run) -> None:
    assert _unreadable(run.unreadable) == EVERY_SERVER
    assert {n.receiver_path for n in run.unreadable} == {RECEIVER}
    # One warning, on the agent's own stderr, names the file; nothing exported does (below).
    warnings = [line for line in run.corrupt_log.splitlines() if CANARY_PIN_PATH in line]
    assert len(warnings) == 1, run.corrupt_log[-3000:]
