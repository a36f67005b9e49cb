"""``otel-mcp-health pin`` from live servers (real SDK servers, the real ``mcp`` client through
the check's own discovery): a stdio server of ours whose catalog changes one thing at a time, a
third-party stdio server, and our streamable HTTP server.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_mcp_health.core.pins import parse_pins
from otel_mcp_health.core.server import ServerLabel
from tests.pin.pin_server import HOSTILE_NAMES, SERVER_NAME
from tests.pin.pin_support import live, no_canary, pin, tools_file


@pytest.fixture(scope="module")
def pinned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pin file of our server's reviewed (``base``) catalog, pinned live over stdio."""
    path = tmp_path_factory.mktemp("live") / "pins.toml"
    result = pin("--pins", path, *live("base"))
    assert result.code == 0, result.err
    no_canary(result.out, result.err)
    return path


def test_live_stdio_pins_every_tool_under_the_handshake_name_literally(pinned: Path) -> None:
    text = pinned.read_text(encoding="utf-8")
    no_canary(text)
    (entry,) = parse_pins(text).servers
    # The announced name has glob characters: the entry matches that name, and only it.
    assert entry.matches(ServerLabel(SERVER_NAME, None, None))
    assert not entry.matches(ServerLabel("pintserver", None, None))
    assert (entry.address, entry.port, entry.source) == (None, None, "live")
    assert {tool.name for tool in entry.tools} == {"lookup", "write_note", *HOSTILE_NAMES}
    assert all(tool.digest and len(tool.members) == 7 for tool in entry.tools)


@pytest.mark.parametrize(
    ("variant", "code", "verdict", "line"),
    [
        ("base", 0, "approved", None),
        ("description", 1, "drifted (material_change)", '  material  "lookup"  (description)'),
        ("argument", 1, "drifted (material_change)", '  material  "lookup"  (inputSchema)'),
        ("title", 0, "approved", '  cosmetic  "lookup"  (title)'),
        ("added", 1, "drifted (tool_added)", '  added     "delete_all"'),
        ("removed", 0, "approved", '  removed   "write_note"'),
    ],
)
def test_verify_against_the_live_server_classifies_each_change(
    pinned: Path, variant: str, code: int, verdict: str, line: str | None
) -> None:
    before = pinned.read_bytes()
    result = pin("--pins", pinned, "--verify", *live(variant))
    assert (result.code, result.err) == (code, "")
    assert result.out.startswith(verdict + ": ")
    if line is not None:
        assert line + "\n" in result.out
    no_canary(result.out)
    assert pinned.read_bytes() == before  # --verify never writes


def test_pinning_the_same_server_again_needs_update_and_changes_nothing(pinned: Path) -> None:
    before = pinned.read_bytes()
    again = pin("--pins", pinned, *live("base"))
    assert again.code == 2
    assert "already pinned; use --update" in again.err
    same = pin("--pins", pinned, "--update", "--accept", *live("base"))
    assert same.code == 0, same.err
    assert "no change: nothing written" in same.out
    assert pinned.read_bytes() == before


def test_update_prints_the_diff_and_writes_only_with_accept(tmp_path: Path) -> None:
    path = tmp_path / "pins.toml"
    assert pin("--pins", path, *live("base")).code == 0
    before = path.read_bytes()
    pending = pin("--pins", path, "--update", *live("description"))
    assert pending.code == 1
    assert '  material  "lookup"  (description)\n' in pending.out
    assert "not written: run again with --accept" in pending.out
    no_canary(pending.out, pending.err)
    assert path.read_bytes() == before
    accepted = pin("--pins", path, "--update", "--accept", *live("description"))
    assert accepted.code == 0, accepted.err
    assert path.read_bytes() != before
    assert pin("--pins", path, "--verify", *live("description")).code == 0
    assert pin("--pins", path, "--verify", *live("base")).code == 1


def test_a_third_party_server_pins_and_verifies(time_server: list[str], tmp_path: Path) -> None:
    path = tmp_path / "pins.toml"
    created = pin("--pins", path, *time_server)
    assert created.code == 0, created.err
    (entry,) = parse_pins(path.read_text(encoding="utf-8")).servers
    assert entry.name == "mcp-time"
    assert {tool.name for tool in entry.tools} >= {"get_current_time", "convert_time"}
    assert pin("--pins", path, "--verify", *time_server).code == 0


def test_live_streamable_http_pins_the_address_and_port(http_base: str, tmp_path: Path) -> None:
    path = tmp_path / "pins.toml"
    created = pin("--pins", path, "--url", f"{http_base}/mcp")
    assert created.code == 0, created.err
    (entry,) = parse_pins(path.read_text(encoding="utf-8")).servers
    port = http_base.rsplit(":", 1)[1]
    assert (entry.name, entry.address, entry.port) == ("check-healthy", "127.0.0.1", port)
    assert len(entry.tools) == 7  # both pages of the two-page listing
    verified = pin("--pins", path, "--verify", "--url", f"{http_base}/mcp")
    assert verified.code == 0
    assert verified.out == (
        f'approved: server "check-healthy" (address "127.0.0.1", port "{port}"): '
        "0 material, 0 cosmetic, 0 added, 0 removed\n"
    )


def test_an_unreachable_server_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "pins.toml"
    result = pin("--pins", path, "--url", "http://127.0.0.1:9/mcp", "--timeout", "5")
    assert result.code == 2
    assert "nothing pinned" in result.err
    assert not path.exists()


def test_a_new_entry_goes_before_a_catch_all_and_a_shadowed_one_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pins.toml"
    catch_all = pin("--pins", path, "--name", "*", "--tools-file", tools_file(tmp_path, "title"))
    assert catch_all.code == 0, catch_all.err
    assert pin("--pins", path, *live("base")).code == 0
    names = [s.name for s in parse_pins(path.read_text(encoding="utf-8")).servers]
    assert names == ["pin[[]test][*]server", "*"]  # the specific entry first: it applies
    assert pin("--pins", path, "--verify", *live("base")).code == 0

    shadowed = tmp_path / "shadowed.toml"
    glob = "pin?test?*server"  # matches the server, but not the new entry's own glob text
    assert (
        pin("--pins", shadowed, "--name", glob, "--tools-file", tools_file(tmp_path, "title")).code
        == 0
    )
    before = shadowed.read_bytes()
    result = pin("--pins", shadowed, *live("base"))
    assert result.code == 2
    assert f'the earlier entry server "{glob}" (address any, port any) matches this server' in (
        result.err
    )
    assert shadowed.read_bytes() == before


def test_both_protocol_eras_pin_the_same_catalog(tmp_path: Path) -> None:
    # auto probes server/discover (2026-07-28) first; legacy is the initialize handshake
    legacy, modern = tmp_path / "legacy.toml", tmp_path / "auto.toml"
    assert pin("--pins", legacy, "--era", "legacy", *live("base")).code == 0
    assert pin("--pins", modern, "--era", "auto", *live("base")).code == 0
    assert legacy.read_bytes() == modern.read_bytes()
    assert pin("--pins", legacy, "--verify", "--era", "auto", *live("base")).code == 0
