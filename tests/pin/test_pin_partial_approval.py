"""Pins from an MCPB manifest are partial, and the approval says so (docs/approval.md, partial
pins): ``pin --mcpb`` writes the pins through the real CLI, a real client discovers and calls a
real server (in-process, both protocol eras; stdio through ``check --pins``), and a new argument or
a dropped ``readOnlyHint`` stays ``approved`` (a chosen trade-off) but never reads as a full
approval: the discovery span names the members never compared, the call span says its pin is
partial, ``check`` and ``pin --verify`` print them. Full pins of the same catalog are unchanged."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from otel_mcp_health import attributes as A
from tests.approval_hostile.hostile_servers import Mutable
from tests.check.check_support import check
from tests.integration.approval_servers import CANARIES, CANARY_PIN_SCHEMA, tools, wire
from tests.integration.test_approval_privacy import instrumented
from tests.pin.pin_support import manifest, pin

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:`LoggingHandler` in `opentelemetry-sdk`:DeprecationWarning"),
]
NAME = "rt-partial"
UNCOMPARED = ["annotations", "execution", "inputSchema", "outputSchema"]
#: change -> the tool it touches
CHANGED_TOOL = {"unchanged": "lookup", "schema": "read_file", "read_only_dropped": "lookup"}


@pytest.fixture(params=["legacy", "auto"])
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _pins(tmp: Path, kind: str) -> Path:
    """``partial``: ``pin --mcpb`` of a manifest stating names and descriptions; ``full``: ``pin
    --tools-file`` of the whole reviewed tools/list. Both through the real CLI."""
    path = tmp / f"{kind}.toml"
    reviewed = wire(tools("unchanged"))
    if kind == "partial":
        stated = [{"name": t["name"], "description": t["description"]} for t in reviewed]
        source = tmp / "manifest.json"
        source.write_text(json.dumps(manifest(stated)), encoding="utf-8")
        result = pin("--pins", path, "--name", NAME, "--mcpb", source)
        assert "partial pins" in result.err
    else:
        source = tmp / "tools.json"
        source.write_text(json.dumps({"result": {"tools": reviewed}}), encoding="utf-8")
        result = pin("--pins", path, "--name", NAME, "--tools-file", source)
    assert result.code == 0, result.err
    return path


async def _spans(pins: Path, change: str, era: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The discovery span that carries the approval, and the call span of the changed tool."""
    server = Mutable(NAME)
    server.served = tools(change)
    tool = CHANGED_TOOL[change]
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            await client.list_tools()
            await client.call_tool(tool, {"path": "a", "q": "b"})
        attrs = [dict(s.attributes or {}) for s in t.pipeline.spans()]
    [found] = [a for a in attrs if A.CATALOG_APPROVAL in a]
    [call] = [a for a in attrs if a.get(A.GEN_AI_TOOL_NAME) == tool and A.CALL_APPROVAL in a]
    for canary in CANARIES:
        assert canary not in repr(attrs)
    return found, call


@pytest.mark.parametrize("change", ["unchanged", "schema", "read_only_dropped"])
async def test_partial_pins_stay_approved_and_say_what_they_never_compared(
    tmp_path: Path, era: str, change: str
) -> None:
    found, call = await _spans(_pins(tmp_path, "partial"), change, era)
    assert found[A.CATALOG_APPROVAL] == "approved"
    assert list(found[A.CATALOG_APPROVAL_UNCOMPARED_MEMBERS]) == UNCOMPARED
    assert call[A.CALL_APPROVAL] == "approved"
    assert call[A.CALL_APPROVAL_PARTIAL] is True
    assert call[A.VERDICT] != "stale_catalog"  # a chosen trade-off, not a stale catalog


@pytest.mark.parametrize(
    ("change", "approval", "call_approval"),
    [
        ("unchanged", "approved", "approved"),
        ("schema", "drifted", "unapproved"),
        ("read_only_dropped", "drifted", "unapproved"),
    ],
)
async def test_full_pins_are_unchanged(
    tmp_path: Path, era: str, change: str, approval: str, call_approval: str
) -> None:
    found, call = await _spans(_pins(tmp_path, "full"), change, era)
    assert found[A.CATALOG_APPROVAL] == approval
    assert A.CATALOG_APPROVAL_UNCOMPARED_MEMBERS not in found
    assert call[A.CALL_APPROVAL] == call_approval
    assert A.CALL_APPROVAL_PARTIAL not in call


def _stdio(change: str) -> list[str]:
    return ["--", sys.executable, "-m", "tests.integration.approval_servers", "stdio", change, NAME]


@pytest.mark.parametrize("change", ["schema", "read_only_dropped"])
def test_check_shows_partial_pins_and_exits_0(tmp_path: Path, change: str) -> None:
    pins = _pins(tmp_path, "partial")
    text = check("--pins", str(pins), *_stdio(change))
    assert text.code == 0, text.out + text.err
    assert "approval  approved (partial pins): the pinned members match" in text.out
    assert f"not compared for some tools (partial pins): {' '.join(UNCOMPARED)}" in text.out
    tool = CHANGED_TOOL[change]
    args = ("--call", tool, "--args", '{"path": "a", "q": "b"}')
    report = check("--json", "--pins", str(pins), *args, *_stdio(change))
    # no outcome verifier: the call reads unverified (exit 1) with or without pins, never stale
    assert report.json()["verdict"] == "unverified", report.out + report.err
    approval = report.json()["catalog"]["approval"]
    assert (approval["verdict"], approval["uncomparedMembers"]) == ("approved", UNCOMPARED)
    call = report.json()["call"]
    assert (call["approval"], call["approvalPartial"]) == ("approved", True)
    full = check("--json", "--pins", str(_pins(tmp_path, "full")), *args, *_stdio(change))
    assert (full.code, full.json()["verdict"]) == (1, "stale_catalog")
    assert full.json()["catalog"]["approval"]["uncomparedMembers"] == []
    assert full.json()["call"]["approvalPartial"] is False
    for output in (text.out, report.out, full.out):
        assert CANARY_PIN_SCHEMA not in output


def test_pin_verify_notes_partial_pins(tmp_path: Path) -> None:
    source = tmp_path / "schema.json"
    source.write_text(json.dumps({"result": {"tools": wire(tools("schema"))}}), encoding="utf-8")
    verify = ("--verify", "--name", NAME, "--tools-file", source)
    partial = pin("--pins", _pins(tmp_path, "partial"), *verify)
    assert partial.code == 0, partial.out + partial.err
    assert f"partial pins: {', '.join(UNCOMPARED)} not compared" in partial.out
    full = pin("--pins", _pins(tmp_path, "full"), *verify)
    assert full.code == 1
    assert "partial pins" not in full.out + full.err
