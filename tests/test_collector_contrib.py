"""The bundled collector configs run on the stock ``otelcol-contrib`` distribution unchanged.

collector/README.md says so; this checks it without Go or a binary. Every component each bundled
config declares is mapped to the Go module that registers its type, that module must be in the
custom build's manifest (``builder-config.yaml``, whose binary validates each layout in
``tests/pipeline/test_static_checks.py``) and in the component list of ``otelcol-contrib``'s own
manifest, checked into ``collector/`` with its source named in its header.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

COLLECTOR = Path(__file__).resolve().parents[1] / "collector"
CONTRIB = COLLECTOR / "otelcol-contrib-manifest-v0.159.0.yaml"
BUILD = COLLECTOR / "builder-config.yaml"
CONFIGS = [
    COLLECTOR / "otelcol.yaml",
    COLLECTOR / "gateway" / "agent.yaml",
    COLLECTOR / "gateway" / "gateway.yaml",
]
KINDS = ("extensions", "receivers", "processors", "connectors", "exporters")
CORE = "go.opentelemetry.io/collector/"
CONTRIB_MODULES = "github.com/open-telemetry/opentelemetry-collector-contrib/"
#: (kind, component type) -> the module that registers that type.
MODULE_OF_TYPE = {
    ("extensions", "health_check"): CONTRIB_MODULES + "extension/healthcheckextension",
    ("receivers", "otlp"): CORE + "receiver/otlpreceiver",
    ("processors", "batch"): CORE + "processor/batchprocessor",
    ("processors", "memory_limiter"): CORE + "processor/memorylimiterprocessor",
    ("processors", "attributes"): CONTRIB_MODULES + "processor/attributesprocessor",
    ("processors", "transform"): CONTRIB_MODULES + "processor/transformprocessor",
    ("processors", "tail_sampling"): CONTRIB_MODULES + "processor/tailsamplingprocessor",
    ("connectors", "forward"): CORE + "connector/forwardconnector",
    ("connectors", "span_metrics"): CONTRIB_MODULES + "connector/spanmetricsconnector",
    ("exporters", "otlp_grpc"): CORE + "exporter/otlpexporter",
    ("exporters", "otlp_http"): CORE + "exporter/otlphttpexporter",
    ("exporters", "debug"): CORE + "exporter/debugexporter",
    ("exporters", "prometheus"): CONTRIB_MODULES + "exporter/prometheusexporter",
    ("exporters", "file"): CONTRIB_MODULES + "exporter/fileexporter",
    ("exporters", "loadbalancing"): CONTRIB_MODULES + "exporter/loadbalancingexporter",
}


def _modules(manifest: Path) -> dict[str, str]:
    """Module path -> version, for every ``- gomod:`` line of an OCB manifest."""
    text = manifest.read_text(encoding="utf-8")
    return dict(re.findall(r"^\s*- gomod: (\S+) (v\S+)", text, re.MULTILINE))


def _components(config: Path) -> set[tuple[str, str]]:
    """(kind, type) of every component the config declares at the top level of its sections."""
    found: set[tuple[str, str]] = set()
    kind = None
    for line in config.read_text(encoding="utf-8").splitlines():
        if re.fullmatch(r"[a-z_]+:.*", line):
            kind = line.split(":")[0]
        elif kind in KINDS and (match := re.fullmatch(r"  ([a-z_]+)(?:/[\w-]+)?:.*", line)):
            found.add((kind, match.group(1)))
    return found


def test_the_contrib_manifest_is_the_named_release_unchanged() -> None:
    text = CONTRIB.read_text(encoding="utf-8")
    assert "tag         v0.159.0" in text
    assert "distributions/otelcol-contrib/manifest.yaml" in text
    assert "\n  name: otelcol-contrib\n" in text
    assert "\n  version: 0.159.0\n" in text
    assert "v0.159.0" in set(_modules(CONTRIB).values())
    assert len(_modules(CONTRIB)) > 200  # the whole distribution, not an excerpt


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.relative_to(COLLECTOR).as_posix())
def test_every_component_of_the_config_ships_in_otelcol_contrib(config: Path) -> None:
    components = _components(config)
    assert components, f"{config.name} declares no component"
    unknown = components - set(MODULE_OF_TYPE)
    assert not unknown, f"{config.name}: map these types to their modules: {unknown}"
    contrib, build = _modules(CONTRIB), _modules(BUILD)
    for component in sorted(components):
        module = MODULE_OF_TYPE[component]
        assert module in build, f"{component}: {module} is not in builder-config.yaml"
        assert module in contrib, f"{component}: {module} is not in otelcol-contrib"


def test_the_custom_build_is_a_subset_of_otelcol_contrib() -> None:
    build, contrib = _modules(BUILD), _modules(CONTRIB)
    # the configs' components, and the debug, file and OTLP/HTTP exporters the tests' overlays use
    assert set(build) <= set(contrib), set(build) - set(contrib)
