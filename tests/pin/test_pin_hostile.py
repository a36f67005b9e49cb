"""The pin file and ``otel-mcp-health pin`` against hostile files, servers and orderings: a broader
entry never takes over a reviewed one, a renamed server is not green, a FIFO never blocks, a
planted link is never written through, a homoglyph rename is visible in the diff."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_mcp_health.core.pins import PinFile, ServerPins
from otel_mcp_health.core.server import ServerLabel
from otel_mcp_health.pin import _command
from otel_mcp_health.pin._command import PinEntry, create, read_pins
from otel_mcp_health.pin._sources import tools_file
from tests.check.check_support import check
from tests.pin.pin_support import pin
from tests.support.served import served

SERVER = Path(__file__).resolve().parent / "two_path_server.py"
TOOL = {"name": "read_file", "description": "Read", "inputSchema": {"type": "object"}}


@pytest.fixture
def http_url() -> Iterator[str]:
    """two_path_server over streamable HTTP named ``srv``: ``/mcp`` base, ``/evil`` poisoned."""
    with served([sys.executable, str(SERVER), "http", "srv"]) as url:
        yield url


def _stdio(variant: str) -> list[str]:
    return ["--", sys.executable, str(SERVER), "stdio", "srv", variant]


def test_pinning_a_stdio_server_after_a_same_named_http_one_keeps_the_http_pins(
    tmp_path: Path, http_url: str
) -> None:
    pins = tmp_path / "pins.toml"
    assert pin("--pins", pins, "--url", http_url + "/mcp").code == 0
    assert pin("--pins", pins, "--verify", "--url", http_url + "/evil").code == 1  # drift seen
    # pinning the (different) stdio server of the same name must not disarm the HTTP entry
    assert pin("--pins", pins, *_stdio("description")).code in (0, 2)
    assert pin("--pins", pins, "--verify", "--url", http_url + "/evil").code == 1


def test_upsert_never_puts_a_broader_entry_before_one_it_shadows() -> None:
    http = ServerPins("srv", "127.0.0.1", "8000", None, ())
    stdio = ServerPins("srv", None, None, None, ())
    merged = PinFile((http,)).upsert(stdio)
    assert merged.for_server(ServerLabel("srv", "127.0.0.1", 8000)) is http


def test_a_file_source_entry_cannot_take_over_an_existing_entry(tmp_path: Path) -> None:
    pins, tools = tmp_path / "pins.toml", tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": [TOOL]}), encoding="utf-8")
    specific = ("--name", "srv", "--address", "10.0.0.1")
    assert pin("--pins", pins, *specific, "--tools-file", tools).code == 0
    assert pin("--pins", pins, "--name", "s*", "--tools-file", tools).code in (0, 2)
    parsed = read_pins(str(pins), missing_ok=False)
    assert parsed is not None
    assert parsed.for_server(ServerLabel("srv", "10.0.0.1", None)).address == "10.0.0.1"  # type: ignore[union-attr]


def test_the_temporary_file_is_not_a_planted_symbolic_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    pins = tmp_path / "pins.toml"
    (tmp_path / f".pins.toml.{os.getpid()}.tmp").symlink_to(victim)
    _command._write(str(pins), PinFile((ServerPins("srv", None, None, None, ()),)))
    assert victim.read_text(encoding="utf-8") == "precious\n"


def test_an_edit_made_while_pin_runs_is_not_silently_lost(tmp_path: Path) -> None:
    pins, tools = tmp_path / "pins.toml", tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": [TOOL]}), encoding="utf-8")
    assert pin("--pins", pins, "--name", "a", "--tools-file", tools).code == 0
    current = read_pins(str(pins), missing_ok=True)  # pin has read the file ...
    assert pin("--pins", pins, "--name", "b", "--tools-file", tools).code == 0  # ... someone edits
    target = PinEntry(str(pins), "c", None, None)
    with contextlib.suppress(_command.PinInputError):  # refusing is a fix too
        create(
            current, tools_file(str(tools)), target, update=False, accept=False, out=io.StringIO()
        )
    names = [s.name for s in read_pins(str(pins), missing_ok=False).servers]  # type: ignore[union-attr]
    assert "b" in names


def test_a_homoglyph_rename_is_visible_in_the_diff(tmp_path: Path) -> None:
    pins, before, after = tmp_path / "pins.toml", tmp_path / "a.json", tmp_path / "b.json"
    before.write_text(json.dumps({"tools": [TOOL]}), encoding="utf-8")
    after.write_text(json.dumps({"tools": [dict(TOOL, name="read_f\u0456le")]}), encoding="utf-8")
    assert pin("--pins", pins, "--name", "s", "--tools-file", before).code == 0
    result = pin("--pins", pins, "--name", "s", "--update", "--tools-file", after)
    assert result.code == 1
    assert "\\u0456" in result.out  # the reviewer must be able to tell the two names apart


def test_a_fifo_as_the_approved_catalog_does_not_block_the_host(tmp_path: Path) -> None:
    fifo = tmp_path / "pins.toml"
    os.mkfifo(fifo)
    code = f"from otel_mcp_health.instrumentation._approval import load; load({str(fifo)!r})"
    try:
        subprocess.run([sys.executable, "-c", code], timeout=20, check=True, env=os.environ)
    except subprocess.TimeoutExpired:
        pytest.fail("instrumenting with a FIFO as the pin file blocked the host")


def test_check_with_pins_is_not_green_for_a_nameless_modern_session(
    tmp_path: Path, time_server: list[str]
) -> None:
    """``--era modern`` has no handshake, so no server name: no named entry matches."""
    pins = tmp_path / "pins.toml"
    assert pin("--pins", pins, *time_server).code == 0
    paris = [*time_server[:-1], "Europe/Paris"]  # mcp-server-time's schemas name the timezone
    assert check("--pins", str(pins), *paris).code == 1  # drifted (material) in era auto
    assert check("--pins", str(pins), "--era", "modern", *paris).code == 1
