"""Static checks of the operator's side, each with the real tool: promtool, amtool, the built
collector's ``validate``, strict ``tsc`` against ``@grafana/schema``; and the names they use
against the product's own attribute module."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from tests.pipeline.pipeline_stack import ALERTING_DIR, COLLECTOR_DIR, ROOT, binary

from otel_mcp_health import attributes as A
from otel_mcp_health.core.reasons import Reason
from otel_mcp_health.core.vocabulary import ApprovalVerdict

pytestmark = pytest.mark.pipeline

DASHBOARDS_DIR = ROOT / "dashboards"
RULES = ALERTING_DIR / "mcp-health-rules.yml"
#: Every alert's owner label and the Alertmanager receiver it must reach.
RECEIVER_OF_OWNER = {
    "credential_holder": "credential-holder",
    "integration_owner": "integration-owner",
    "catalog_owner": "catalog-owner",
    "catalog_reviewer": "catalog-reviewer",
    "agent_owner": "agent-owner",
    "client_implementer": "client-implementer",
    "on_call": "on-call-pager",
    "outcome_owner": "outcome-owner",
    "platform": "platform",
}


def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def alert_owners() -> dict[str, str]:
    """``alertname -> owner`` as written in the rule file."""
    text = RULES.read_text()
    owners = dict(re.findall(r"- alert: (\w+)\n(?:.*\n)*?\s+owner: (\w+)", text))
    assert len(owners) == text.count("- alert: ")
    return owners


def test_promtool_checks_the_rules_and_the_example_config() -> None:
    promtool = binary("promtool")
    for argv in (("check", "rules", str(RULES)), ("check", "config", "prometheus.yml")):
        result = run(promtool, *argv, cwd=ALERTING_DIR)
        assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_unit_tests_fire_and_stay_silent() -> None:
    result = run(binary("promtool"), "test", "rules", "mcp-health-rules.test.yml", cwd=ALERTING_DIR)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_firing_and_a_silent_case() -> None:
    tests = (ALERTING_DIR / "mcp-health-rules.test.yml").read_text()
    for alert in alert_owners():
        firing = re.search(rf"alertname: {alert}\n\s+exp_alerts:\n\s+- exp_labels", tests)
        silent = re.search(rf"alertname: {alert}, exp_alerts: \[\]", tests)
        assert firing, alert
        assert silent, alert


def test_an_agent_that_never_refreshes_is_not_a_server_that_changed() -> None:
    """The catalog alerts split on the call reason the processor writes for a catalog older than
    its maximum age (core.contract: ``catalog_`` + the catalog reason): exactly one alert takes
    it, the other takes every other stale catalog."""
    overdue = f"catalog_{Reason.REFRESH_OVERDUE}"
    text = RULES.read_text()
    rules = dict(re.findall(r"- alert: (\w+)\n\s+expr: \|\n((?:\s{10}.*\n)+)", text))
    assert f'mcp_health_reason="{overdue}"' in rules["McpCatalogRefreshOverdue"]
    assert f'mcp_health_reason!="{overdue}"' in rules["McpStaleCatalog"]
    assert alert_owners()["McpCatalogRefreshOverdue"] != alert_owners()["McpStaleCatalog"]


def test_amtool_accepts_the_alertmanager_config() -> None:
    result = run(binary("amtool"), "check-config", str(ALERTING_DIR / "alertmanager.yml"))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("alert", sorted(alert_owners()))
def test_each_alert_routes_to_its_owner(alert: str) -> None:
    owner = alert_owners()[alert]
    result = run(
        binary("amtool"),
        "config",
        "routes",
        "test",
        f"--config.file={ALERTING_DIR / 'alertmanager.yml'}",
        f"alertname={alert}",
        f"owner={owner}",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == RECEIVER_OF_OWNER[owner]


@pytest.mark.parametrize(
    "configs",
    [
        ["otelcol.yaml"],
        ["otelcol.yaml", "gateway/agent.yaml"],
        ["otelcol.yaml", "gateway/gateway.yaml"],
    ],
    ids=["bundled", "gateway-agent", "gateway-gateway"],
)
def test_the_built_collector_validates_each_layout(configs: list[str]) -> None:
    argv = [binary("otelcol-mcp-health"), "validate", *(f"--config={c}" for c in configs)]
    result = run(*argv, cwd=COLLECTOR_DIR)
    assert result.returncode == 0, result.stdout + result.stderr


def test_validate_rejects_an_unknown_key(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        (COLLECTOR_DIR / "otelcol.yaml").read_text().replace("decision_wait:", "decision_wiat:")
    )
    result = run(binary("otelcol-mcp-health"), "validate", f"--config={broken}")
    assert result.returncode != 0
    assert "decision_wiat" in result.stdout + result.stderr


def test_the_manifest_pins_every_component_at_one_version() -> None:
    manifest = (COLLECTOR_DIR / "builder-config.yaml").read_text()
    versions = set(re.findall(r"- gomod: \S+ (v\S+)", manifest))
    assert versions == {"v0.161.0"}


def test_dashboards_type_check_with_strict_tsc(tmp_path: Path) -> None:
    node = binary("node")
    result = run(node, "check-dashboards.mjs", cwd=DASHBOARDS_DIR)
    assert result.returncode == 0, result.stdout + result.stderr
    typo = tmp_path / "typo.json"
    typo.write_text(
        (DASHBOARDS_DIR / "mcp-health.json").read_text().replace('"title"', '"titel"', 1)
    )
    result = run(node, "check-dashboards.mjs", str(typo), cwd=DASHBOARDS_DIR)
    assert result.returncode != 0
    assert "titel" in result.stdout + result.stderr


def _prometheus_label(attribute: str) -> str:
    return attribute.replace(".", "_")


def test_dashboards_and_alerts_group_by_the_whole_exported_server_label() -> None:
    """A query that groups by a server groups by its whole exported label (docs/model.md#scope:
    ``server.address``, ``server.port``, ``mcp_health.server.name``), so two servers behind one
    host (two ports) or one port (two names) are never summed into one row, and the collector
    keeps all three dimensions."""
    label = {_prometheus_label(a) for a in (A.SERVER_ADDRESS, A.SERVER_PORT, A.SERVER_NAME)}
    config = (COLLECTOR_DIR / "otelcol.yaml").read_text()
    assert {A.SERVER_ADDRESS, A.SERVER_PORT, A.SERVER_NAME} <= set(
        re.findall(r"- name: ([a-z_]+\.[a-z_.]+)\n", config)
    )
    for path in (DASHBOARDS_DIR / "mcp-health.json", RULES):
        groups = [
            {name.strip() for name in group.split(",")}
            for group in re.findall(r"by \(([^)]*)\)", path.read_text())
        ]
        by_server = [group for group in groups if group & label]
        assert by_server, path
        for group in by_server:
            assert label <= group, (path.name, sorted(group))


def test_every_name_the_operator_side_uses_is_the_products() -> None:
    """Renaming an attribute constant fails here until collector, rules and dashboards follow."""
    ours = {v for k, v in vars(A).items() if k.isupper() and isinstance(v, str)}
    config = (COLLECTOR_DIR / "otelcol.yaml").read_text()
    dimensions = re.findall(r"- name: ([a-z_]+\.[a-z_.]+)\n", config)
    assert dimensions
    assert set(dimensions) <= ours
    for required in (
        A.VERDICT,
        A.CALL_FIRST_FAILED_LAYER,
        A.NEXT_ACTION,
        A.MCP_METHOD_NAME,
        A.GEN_AI_TOOL_NAME,
        A.SERVER_ADDRESS,
        A.SERVER_NAME,
    ):
        assert required in dimensions
    labels = {_prometheus_label(name) for name in ours}
    metrics = {_prometheus_label(v) for k, v in vars(A).items() if k.startswith("METRIC_")}
    used = RULES.read_text() + (DASHBOARDS_DIR / "mcp-health.json").read_text()
    pattern = r"\b(mcp_health_[a-z_]+|mcp_[a-z_]+|gen_ai_[a-z_]+)(?![\w:*])"
    for name in set(re.findall(pattern, used)):
        known = name in labels or any(name.startswith(m) for m in metrics)
        assert known, f"{name} is neither a product attribute nor a product metric"


def test_a_catalog_change_reaches_its_reviewer_not_the_stale_catalog_owner() -> None:
    """Approved catalogs (docs/attributes.md#approved-catalogs): the drift alert reads the
    processor's approval counter on ``drifted`` only (a cosmetic change stays ``approved``), and
    the calls of an unapproved tool, whose next action is a review, are left out of
    McpStaleCatalog; the bundled collector keeps the approval as a span-metrics dimension and
    keeps every drifted discovery's trace."""
    text = RULES.read_text()
    rules = dict(re.findall(r"- alert: (\w+)\n\s+expr: \|\n((?:\s{10}.*\n)+)", text))
    drift = rules["McpCatalogChangedMaterially"]
    approvals = _prometheus_label(A.METRIC_CATALOG_APPROVALS)
    assert f"{approvals}_total" in text
    approval = _prometheus_label(A.CATALOG_APPROVAL)
    assert f'{approval}="{ApprovalVerdict.DRIFTED}"' in drift
    assert f'"{ApprovalVerdict.APPROVED}"' not in drift  # (tool_unapproved calls are selected)
    unapproved = {Reason.TOOL_UNAPPROVED.value, Reason.PINS_UNREADABLE.value}
    excluded = re.search(r'mcp_health_reason!~"([^"]+)"', rules["McpStaleCatalog"])
    assert excluded
    assert set(excluded[1].split("|")) == unapproved
    assert alert_owners()["McpCatalogChangedMaterially"] == "catalog_reviewer"
    config = (COLLECTOR_DIR / "otelcol.yaml").read_text()
    dimensions = re.findall(r"- name: ([a-z_]+\.[a-z_.]+)\n", config)
    assert {A.CATALOG_APPROVAL, A.CATALOG_APPROVAL_REASON} <= set(dimensions)
    drifted = f'attributes["{A.CATALOG_APPROVAL}"] == "{ApprovalVerdict.DRIFTED}"'
    assert drifted in config
