"""Packaging facts pinned together: version, extras, entry points, typing marker, exports."""

from __future__ import annotations

import tomllib
from importlib.metadata import entry_points, metadata, version
from pathlib import Path

import otel_mcp_health
from otel_mcp_health.package import _instruments

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_version_is_single_sourced() -> None:
    assert version("otel-mcp-health") == otel_mcp_health.__version__


def test_instruments_extra_mirrors_the_supported_range() -> None:
    assert PYPROJECT["project"]["optional-dependencies"]["instruments"] == list(_instruments)
    assert not any(dep.startswith("mcp") for dep in PYPROJECT["project"]["dependencies"])


def test_runtime_dependencies_are_the_design_cards() -> None:
    names = {dep.split()[0] for dep in PYPROJECT["project"]["dependencies"]}
    assert names == {
        "opentelemetry-api",
        "opentelemetry-sdk",
        "opentelemetry-exporter-otlp",
        "opentelemetry-instrumentation",
        "wrapt",
        "rfc8785",
    }


def test_entry_points_resolve() -> None:
    groups = {
        "opentelemetry_instrumentor": "McpHealthInstrumentor",
        "opentelemetry_environment_variables": "environment_variables",
        "opentelemetry_configurator": "McpHealthConfigurator",
    }
    for group, suffix in groups.items():
        (ep,) = [ep for ep in entry_points(group=group) if ep.name == "mcp_health"]
        assert ep.value.endswith(suffix)
        assert ep.load() is not None


def test_py_typed_ships_and_classifier_says_so() -> None:
    assert (ROOT / "src" / "otel_mcp_health" / "py.typed").exists()
    assert "Typing :: Typed" in metadata("otel-mcp-health").get_all("Classifier")


def test_every_public_name_resolves_lazily() -> None:
    for name in otel_mcp_health.__all__:
        assert getattr(otel_mcp_health, name) is not None
    assert sorted(otel_mcp_health.__all__) == sorted(["__version__", *otel_mcp_health._EXPORTS])


def test_the_wheel_carries_the_apache_license(tmp_path: Path) -> None:
    import zipfile

    from hatchling.builders.wheel import WheelBuilder

    assert "Apache License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    (wheel,) = WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=["standard"])
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        licenses = [n for n in names if n.endswith("licenses/LICENSE")]
        assert licenses, names
        assert "TERMS AND CONDITIONS" in archive.read(licenses[0]).decode()
        meta = next(n for n in names if n.endswith("METADATA"))
        assert "License-File: LICENSE" in archive.read(meta).decode()
