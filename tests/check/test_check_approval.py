"""``check --pins FILE``: the discovery judged against an approved catalog; drift exits 1.

Real servers whose catalog changed since it was pinned (``tests/integration/approval_servers.py``),
over stdio and streamable HTTP, through the real CLI entry point. The check shows the approval in
words and in ``--json``; a catalog that drifted is unhealthy (exit 1) even when it converged, an
approved one exits 0; a pin file that cannot be opened is a usage error naming it (exit 2), one
that cannot be parsed fails closed as in an agent (its warning on the check's stderr). Without
``--pins`` the instrumentation's own setting (``OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG``)
applies.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.check.check_support import check
from tests.integration.approval_servers import CANARY_PIN_DESCRIPTION, CHANGES, server_name
from tests.integration.test_approval_zero_code import ROOT, reviewed, write_pins
from tests.support.served import served

from otel_mcp_health.core.pins import pin_server


def stdio(change: str) -> list[str]:
    return ["--", sys.executable, "-m", "tests.integration.approval_servers", "stdio", change]


@pytest.fixture(scope="module")
def pins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tools = reviewed()
    servers = [pin_server(tools, name=server_name(change)) for change in CHANGES]
    return write_pins(tmp_path_factory.mktemp("check-pins"), servers)


@pytest.fixture(scope="module")
def drifted_http() -> Iterator[str]:
    """``approval-description`` over streamable HTTP (its description changed since pinning)."""
    argv = [sys.executable, "-m", "tests.integration.approval_servers", "http", "description"]
    with served(argv, cwd=ROOT) as url:
        yield url + "/mcp"


def test_a_drifted_server_exits_unhealthy_and_says_why(pins: Path) -> None:
    result = check("--pins", str(pins), *stdio("description"))
    assert result.code == 1, result.out + result.err
    assert "catalog   converged" in result.out  # convergence and approval are two axes
    assert "approval  drifted (material_change)" in result.out
    assert "material: read_file" in result.out
    assert "changed members: description" in result.out
    assert CANARY_PIN_DESCRIPTION not in result.out


def test_an_approved_server_exits_0(pins: Path) -> None:
    result = check("--pins", str(pins), *stdio("unchanged"))
    assert result.code == 0, result.out + result.err
    assert "approval  approved" in result.out


def test_a_cosmetic_change_stays_approved_and_exits_0(pins: Path) -> None:
    report = check("--json", "--pins", str(pins), *stdio("title")).json()
    assert report["catalog"]["approval"]["verdict"] == "approved"
    assert report["catalog"]["approval"]["cosmetic"] == ["read_file"]
    assert check("--pins", str(pins), *stdio("title")).code == 0


def test_json_carries_the_approval_of_the_discovery_and_of_the_call(
    pins: Path, drifted_http: str
) -> None:
    result = check(
        "--json",
        "--pins",
        str(pins),
        "--call",
        "read_file",
        "--args",
        '{"path": "notes.txt"}',
        "--url",
        drifted_http,
    )
    assert result.code == 1
    report = result.json()
    approval = report["catalog"]["approval"]
    assert (approval["verdict"], approval["reason"]) == ("drifted", "material_change")
    assert (approval["material"], approval["changedMembers"]) == (["read_file"], ["description"])
    assert report["call"]["approval"] == "unapproved"
    assert (report["verdict"], report["reason"], report["nextAction"]) == (
        "stale_catalog",
        "tool_unapproved",
        "review_catalog_change",
    )


def test_the_environment_variable_is_the_default(
    pins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG", str(pins))
    result = check("--json", *stdio("added"))
    assert result.code == 1
    assert result.json()["catalog"]["approval"]["added"] == ["upload_keys"]


def test_without_pins_there_is_no_approval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG", raising=False)
    result = check("--json", *stdio("description"))
    assert (result.code, result.json()["catalog"]["approval"]) == (0, None)


def test_a_corrupt_pin_file_fails_closed_and_a_missing_one_is_a_usage_error(
    tmp_path: Path,
) -> None:
    corrupt = tmp_path / "approved.toml"
    corrupt.write_text("[[server]\n", encoding="utf-8")
    result = check("--json", "--pins", str(corrupt), *stdio("unchanged"))
    assert result.code == 1
    approval = result.json()["catalog"]["approval"]
    assert (approval["verdict"], approval["reason"]) == ("drifted", "pins_unreadable")
    [warning] = [line for line in result.err.splitlines() if "approved catalog" in line]
    assert str(corrupt) in warning
    missing = check("--pins", str(tmp_path / "absent.toml"), *stdio("unchanged"))
    assert missing.code == 2
    assert f"--pins {tmp_path / 'absent.toml'}: cannot be read (FileNotFoundError)" in missing.err
