"""Static checks of the probe's operator side, each with the real tool (promtool, amtool, the built
collector's ``validate``), and the names they use against the probe's own series families: the
probe's alert rules and routes, its dashboard row, the Prometheus relabeling config that
docs/probe.md, the README and collector/alerting/prometheus.yml show (one block, three places),
and the example configuration docs/probe.md quotes."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.pipeline.pipeline_stack import ALERTING_DIR, COLLECTOR_DIR, ROOT, binary

from otel_mcp_health import attributes as A
from otel_mcp_health.core.vocabulary import Verdict
from otel_mcp_health.probe import load_config

pytestmark = pytest.mark.pipeline

PROBE_RULES = ALERTING_DIR / "mcp-probe-rules.yml"
PROBE_DOC = ROOT / "docs" / "probe.md"
EXAMPLE = ROOT / "examples" / "probe.toml"
DASHBOARD = ROOT / "dashboards" / "mcp-health.json"
PROBE_ROW = "Probed servers (otel-mcp-health probe)"
#: Each probe alert, its owner and the Alertmanager receiver that owner reaches.
OWNER_AND_RECEIVER = {
    "McpProbeScrapeFailed": ("platform", "platform"),
    "McpProbeTargetDown": ("platform", "platform"),
    "McpProbeNeedsAuth": ("credential_holder", "credential-holder"),
    "McpProbeCatalogDrifted": ("catalog_reviewer", "catalog-reviewer"),
    "McpProbeCanaryFailed": ("outcome_owner", "outcome-owner"),
}
#: Labels Prometheus adds (job, instance) and the phase of a phase duration; every other label is
#: an attribute of the product's (the relabeling's mcp_health_probe_target and _module too).
NOT_ATTRIBUTES = {"job", "instance", "phase"}


def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def fenced(text: str, marker: str) -> str:
    """The fenced block between ``<!-- marker -->`` and ``<!-- /marker -->``, without fences."""
    found = re.search(rf"<!-- {marker} -->\n```\w+\n(.*?)```\n<!-- /{marker} -->", text, re.DOTALL)
    assert found, marker
    return found[1]


def scrape_config_of_the_docs() -> dict[str, Any]:
    """The Prometheus scrape jobs of docs/probe.md (what the end-to-end test scrapes with)."""
    config: dict[str, Any] = yaml.safe_load(fenced(PROBE_DOC.read_text(), "probe-scrape-config"))
    return config


def probe_alerts() -> dict[str, str]:
    """``alertname -> owner`` as written in the probe's rule file."""
    text = PROBE_RULES.read_text()
    owners = dict(re.findall(r"- alert: (\w+)\n(?:.*\n)*?\s+owner: (\w+)", text))
    assert len(owners) == text.count("- alert: ")
    return owners


def probe_row_exprs() -> list[str]:
    panels, exprs, inside = json.loads(DASHBOARD.read_text())["panels"], [], False
    for panel in panels:
        if panel["type"] == "row":
            inside = panel["title"] == PROBE_ROW
        exprs += [t["expr"] for t in panel.get("targets", [])] if inside else []
    return exprs


def test_promtool_checks_and_unit_tests_the_probe_rules() -> None:
    promtool = binary("promtool")
    result = run(promtool, "check", "rules", str(PROBE_RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    result = run(promtool, "test", "rules", "mcp-probe-rules.test.yml", cwd=ALERTING_DIR)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_probe_alert_has_a_firing_and_a_silent_case() -> None:
    tests = (ALERTING_DIR / "mcp-probe-rules.test.yml").read_text()
    assert set(probe_alerts()) == set(OWNER_AND_RECEIVER)
    for alert in probe_alerts():
        assert re.search(rf"alertname: {alert}\n\s+exp_alerts:\n\s+- exp_labels", tests), alert
        assert re.search(rf"alertname: {alert}, exp_alerts: \[\]", tests), alert


@pytest.mark.parametrize("alert", sorted(OWNER_AND_RECEIVER))
def test_each_probe_alert_routes_to_its_owner(alert: str) -> None:
    owner, receiver = OWNER_AND_RECEIVER[alert]
    assert probe_alerts()[alert] == owner
    result = run(
        binary("amtool"),
        "config",
        "routes",
        "test",
        f"--config.file={ALERTING_DIR / 'alertmanager.yml'}",
        f"alertname={alert}",
        f"owner={owner}",
        "mcp_health_probe_target=github",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == receiver


def test_rules_and_dashboard_row_use_the_probes_series_and_the_products_labels() -> None:
    """A renamed series family or label fails here until the rules and the dashboard follow."""
    families = {v for k, v in vars(A).items() if k.startswith("METRIC_PROBE_")}
    attributes = {v for k, v in vars(A).items() if k.isupper() and isinstance(v, str)}
    labels = {a.replace(".", "_") for a in attributes}
    assert {A.PROBE_TARGET.replace(".", "_"), A.PROBE_MODULE.replace(".", "_")} <= labels
    text = PROBE_RULES.read_text()
    exprs = re.findall(r"expr: \|\n((?:\s{10}.*\n)+)", text) + probe_row_exprs()
    assert len(exprs) >= 4 + 6
    for expr in exprs:
        used = set(re.findall(r"\b((?:mcp_health_probe|probe)_[a-z_]+|up)\{", expr))
        assert used, expr
        assert used <= families | {"up"}, (used - families, expr)  # up: the scrape itself
        grouped = {
            name.strip()
            for group in re.findall(r"by \(([^)]*)\)", expr)
            for name in group.split(",")
        }
        matched = set(re.findall(r"\b([a-z_]+)(?:=~|!=|=)\"", expr))
        assert (grouped | matched) - {"service_name"} <= labels | NOT_ATTRIBUTES, expr
    # Every verdict a probe alert names is one of the product's.
    named = set(re.findall(r'mcp_health_verdict=~?"([a-z_|]+)"', text))
    assert {v for group in named for v in group.split("|")} <= {v.value for v in Verdict}


def test_the_probe_rules_alert_on_scraped_probes_only() -> None:
    """Scheduled probes alert through their span metrics (mcp-health-rules.yml): the probe rules
    must not alert a second time on the same gauges exported over OTLP."""
    exprs = re.findall(r"expr: \|\n((?:\s{10}.*\n)+)", PROBE_RULES.read_text())
    assert exprs
    for expr in exprs:
        scrape = re.search(r'\bup\{job=~"mcp-probe\.\*"\}', expr)  # the /probe scrape's own
        assert scrape or 'service_name=""' in expr, expr


def test_the_relabeling_config_is_one_block_in_docs_readme_and_example_prometheus() -> None:
    docs = scrape_config_of_the_docs()
    readme = yaml.safe_load(fenced((ROOT / "README.md").read_text(), "probe-scrape-config"))
    assert readme == docs
    example = yaml.safe_load((ALERTING_DIR / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in example["scrape_configs"]}
    for job in docs["scrape_configs"]:
        assert jobs[job["job_name"]] == job
    assert "mcp-probe-rules.yml" in example["rule_files"]
    probe = jobs["mcp-probe"]
    assert re.fullmatch("mcp-probe.*", probe["job_name"])  # McpProbeScrapeFailed reads this job
    assert probe["metrics_path"] == "/probe"
    # Every scrape target is a target name of the example configuration, never a URL.
    names = set(load_config(EXAMPLE).targets)
    assert set(probe["static_configs"][0]["targets"]) == names
    listen = load_config(EXAMPLE).listen
    assert probe["relabel_configs"][-1]["replacement"] == listen
    assert jobs["mcp-prober"]["static_configs"][0]["targets"] == [listen]


def test_the_docs_quote_the_example_configuration_and_it_loads() -> None:
    assert fenced(PROBE_DOC.read_text(), "probe-config") == EXAMPLE.read_text()
    config = load_config(EXAMPLE)
    assert config.listen.startswith("127.0.0.1:")
    assert config.targets
    assert not re.search(r"(?i)(token|key|password)\s*=\s*\"", EXAMPLE.read_text())


def test_the_bundled_collector_receives_the_probes_otlp() -> None:
    """Scheduled mode exports OTLP/HTTP (traces and metrics): the bundled collector's OTLP
    receiver listens for HTTP, feeds the span metrics and passes the metrics on; the real
    collector accepts the config."""
    config = yaml.safe_load((COLLECTOR_DIR / "otelcol.yaml").read_text())
    assert "http" in config["receivers"]["otlp"]["protocols"]
    assert "127.0.0.1:4318" in config["receivers"]["otlp"]["protocols"]["http"]["endpoint"]
    pipelines = config["service"]["pipelines"]
    assert "otlp" in pipelines["traces/in"]["receivers"]
    assert "span_metrics" in pipelines["traces/in"]["exporters"]
    assert "otlp" in pipelines["metrics"]["receivers"]
    result = run(
        binary("otelcol-mcp-health"), "validate", "--config=otelcol.yaml", cwd=COLLECTOR_DIR
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dashboard_panels_have_unique_ids_and_do_not_overlap() -> None:
    """Rows added by several changes (the probe's among them) keep Grafana's layout sound: one id
    per panel, no two panels on the same grid cells."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)), sorted(ids)
    cells: dict[tuple[int, int], str] = {}
    for panel in panels:
        pos = panel["gridPos"]
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, (panel["title"], cells[x, y])
                cells[x, y] = panel["title"]
    titles = [panel["title"] for panel in panels]
    assert titles.index(PROBE_ROW) > 0
