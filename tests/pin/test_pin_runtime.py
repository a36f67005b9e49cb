"""What ``pin`` writes is what the run time reads: pins made from a live server with the command
are read zero-code (``OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG``) by the instrumentation
of a real client against the same server, and its discovery span carries the approval."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from otel_mcp_health import attributes as A
from otel_mcp_health.environment_variables import OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG
from tests.pin.pin_support import SERVER, live, pin


def _discovery_approval(options: Any) -> Mapping[str, Any]:
    """The approval attributes on the span that completes the discovery of a real client."""
    from otel_mcp_health.clientside import driver, pipeline

    built = pipeline.build(otlp=False, service_name="pin-runtime-test")
    with pipeline.instrumented(built) as instrumented:
        driver.drive(options, lambda _step: None)
        spans = [dict(s.attributes or {}) for s in instrumented.spans()]
    (found,) = [a for a in spans if A.CATALOG_APPROVAL in a]
    return found


@pytest.mark.parametrize(
    ("variant", "approval", "changed"),
    [
        ("base", "approved", None),
        ("title", "approved", ("title",)),
        ("description", "drifted", ("description",)),
        ("added", "drifted", None),
    ],
)
def test_live_stdio_pins_are_read_by_the_zero_code_run_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variant: str, approval: str, changed: Any
) -> None:
    from otel_mcp_health.clientside.command_line import CheckOptions

    path = tmp_path / "pins.toml"
    assert pin("--pins", path, *live("base")).code == 0
    monkeypatch.setenv(OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG, str(path))
    command = (sys.executable, str(SERVER), variant)
    found = _discovery_approval(CheckOptions(command=command))
    assert found[A.CATALOG_APPROVAL] == approval
    assert found.get(A.CATALOG_APPROVAL_CHANGED_MEMBERS) == changed


def test_live_http_pins_match_the_exported_address_and_port(
    http_base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from otel_mcp_health.clientside.command_line import CheckOptions

    path = tmp_path / "pins.toml"
    assert pin("--pins", path, "--url", f"{http_base}/mcp").code == 0
    monkeypatch.setenv(OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG, str(path))
    found = _discovery_approval(CheckOptions(url=f"{http_base}/mcp"))
    assert found[A.CATALOG_APPROVAL] == "approved"
    # another port of the same host is another server: not covered by these pins
    other = path.read_text(encoding="utf-8").replace(
        f'port = "{http_base.rsplit(":", 1)[1]}"', 'port = "1"'
    )
    path.write_text(other, encoding="utf-8")
    assert (
        _discovery_approval(CheckOptions(url=f"{http_base}/mcp"))[A.CATALOG_APPROVAL] == "unpinned"
    )
