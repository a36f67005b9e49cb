"""``otel-mcp-health pin --mcpb``: pins from an MCP Bundle's manifest (alone or inside the
``.mcpb`` zip), the bundle's SHA-256 checked before anything is read, partial pins of a manifest
that states only names and descriptions, and hostile zips."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from otel_mcp_health.core.pins import parse_pins
from otel_mcp_health.pin._mcpb import MAX_MANIFEST_BYTES
from tests.pin.pin_server import CANARY_DESCRIPTION, catalog
from tests.pin.pin_support import bundle, manifest, no_canary, pin, tools_file


def _stated() -> list[dict[str, str]]:
    """What an MCPB 0.3 manifest states per tool: a name and a description."""
    return [{"name": t["name"], "description": t["description"]} for t in catalog("base")]


def test_a_manifest_gives_partial_pins_of_the_stated_members_only(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest(_stated())), encoding="utf-8")
    pins = tmp_path / "pins.toml"
    result = pin("--pins", pins, "--name", "bundle", "--mcpb", path)
    assert result.code == 0, result.err
    assert "partial pins: the manifest states only description, name per tool" in result.err
    text = pins.read_text(encoding="utf-8")
    no_canary(text, result.out, result.err)
    (entry,) = parse_pins(text).servers
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert entry.source == f"mcpb:sha256:{digest}"
    assert all(t.digest is None and set(t.members) == {"name", "description"} for t in entry.tools)

    def verify(variant: str) -> int:
        source = tools_file(tmp_path, variant)
        return pin("--pins", pins, "--verify", "--name", "bundle", "--tools-file", source).code

    # What the partial pin protects: the description the model reads, and the tool set.
    assert verify("base") == 0
    assert verify("description") == 1
    assert verify("added") == 1
    # What it does not: a schema or title the manifest never stated.
    assert verify("argument") == 0
    assert verify("title") == 0


def test_a_static_tools_list_in_the_manifest_gives_full_pins(tmp_path: Path) -> None:
    static = {
        "initialize": {"serverInfo": {"name": "static-server", "version": "1"}},
        "tools/list": {"tools": catalog("base")},
    }
    document = manifest(_stated(), _meta={"com.microsoft.windows": {"static_responses": static}})
    pins = tmp_path / "pins.toml"
    result = pin("--pins", pins, "--mcpb", bundle(tmp_path, document))
    assert result.code == 0, result.err
    (entry,) = parse_pins(pins.read_text(encoding="utf-8")).servers
    assert entry.name == "static-server"  # the label the server announces
    assert all(t.digest is not None and len(t.members) == 7 for t in entry.tools)
    verify = pin(
        "--pins",
        pins,
        "--verify",
        "--name",
        "static-server",
        "--tools-file",
        tools_file(tmp_path, "argument"),
    )
    assert verify.code == 1


def test_a_mcpb_zip_with_the_right_sha256_pins(tmp_path: Path) -> None:
    path = bundle(tmp_path, manifest(_stated(), tools_generated=True))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    pins = tmp_path / "pins.toml"
    result = pin("--pins", pins, "--name", "b", "--mcpb", path, "--sha256", digest.upper())
    assert result.code == 0, result.err
    assert "tools_generated" in result.err
    assert f'source = "mcpb:sha256:{digest}"' in pins.read_text(encoding="utf-8")


def test_a_wrong_sha256_writes_nothing(tmp_path: Path) -> None:
    path = bundle(tmp_path, manifest(_stated()))
    pins = tmp_path / "pins.toml"
    for bad in ("0" * 64, "sha256:" + "a" * 64, "SHA256:" + "a" * 64):
        result = pin("--pins", pins, "--name", "b", "--mcpb", path, "--sha256", bad)
        assert result.code == 2
        assert "SHA-256 mismatch" in result.err
    assert not pins.exists()
    malformed = pin("--pins", pins, "--name", "b", "--mcpb", path, "--sha256", "abc")
    assert (malformed.code, "--sha256 expects 64 hexadecimal digits" in malformed.err) == (2, True)
    # an existing file is not touched either
    assert pin("--pins", pins, "--name", "b", "--mcpb", path).code == 0
    before = pins.read_bytes()
    again = pin(
        "--pins", pins, "--update", "--accept", "--name", "b", "--mcpb", path, "--sha256", "1" * 64
    )
    assert again.code == 2
    assert pins.read_bytes() == before


def _zip(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ([("server/main.py", b"x")], "no manifest.json at its root"),
        ([("sub/manifest.json", b"{}")], "no manifest.json at its root"),
        ([("manifest.json", b"{}"), ("manifest.json", b'{"tools": []}')], "manifest.json twice"),
        ([("manifest.json", b" " * (MAX_MANIFEST_BYTES + 1))], "larger than"),
        ([("manifest.json", b"{not json")], "not valid JSON"),
        ([("manifest.json", b"[]")], "not a JSON object"),
        ([("manifest.json", json.dumps({"name": "x"}).encode())], "states no tools"),
        ([("../manifest.json", b"{}")], "no manifest.json at its root"),
        ([("manifest.json", b"{}"), ("./manifest.json", b"{}")], "manifest.json twice"),
        ([("manifest.json", b"{}"), ("/manifest.json", b"{}")], "manifest.json twice"),
        ([("Manifest.JSON", b"{}"), ("manifest.json", b"{}")], "manifest.json twice"),
        ([("manifest.json", b"{}"), ("a/../manifest.json", b"{}")], "manifest.json twice"),
        ([("manifest.json", b"{}"), ("a\\..\\manifest.json", b"{}")], "manifest.json twice"),
    ],
    ids=[
        "none",
        "nested",
        "twice",
        "bomb",
        "bad-json",
        "not-object",
        "no-tools",
        "slip",
        "dot-slash-twice",
        "absolute-twice",
        "case-twice",
        "dotdot-twice",
        "backslash-twice",
    ],
)
def test_hostile_or_broken_bundles_are_exit_2(
    tmp_path: Path, members: list[tuple[str, bytes]], message: str
) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
        path = _zip(tmp_path / "x.mcpb", members)
    result = pin("--pins", tmp_path / "p.toml", "--name", "b", "--mcpb", path)
    assert result.code == 2, result.err
    assert message in result.err
    assert result.err.count("\n") == 1
    assert not (tmp_path / "p.toml").exists()


def test_a_truncated_zip_is_exit_2(tmp_path: Path) -> None:
    path = bundle(tmp_path, manifest(_stated()))
    path.write_bytes(path.read_bytes()[:40])
    result = pin("--pins", tmp_path / "p.toml", "--name", "b", "--mcpb", path)
    assert result.code == 2
    assert "not a readable .mcpb" in result.err
    assert CANARY_DESCRIPTION not in result.err


def test_a_manifest_tool_without_a_description_pins_its_name_only(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest([{"name": "lookup"}])), encoding="utf-8")
    pins = tmp_path / "pins.toml"
    assert pin("--pins", pins, "--name", "b", "--mcpb", path).code == 0
    (entry,) = parse_pins(pins.read_text(encoding="utf-8")).servers
    assert [(t.name, set(t.members)) for t in entry.tools] == [("lookup", {"name"})]
    live_tools = tmp_path / "live.json"
    live_tools.write_text(json.dumps([catalog("description")[0]]), encoding="utf-8")
    # nothing but the name was stated: any description reads approved
    verify = pin("--pins", pins, "--verify", "--name", "b", "--tools-file", live_tools)
    assert verify.code == 0


def test_a_manifest_under_a_dot_slash_name_is_read_and_the_prefix_in_any_case(
    tmp_path: Path,
) -> None:
    stated = json.dumps(manifest(_stated())).encode()
    path = _zip(tmp_path / "x.mcpb", [("./manifest.json", stated)])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    pins = tmp_path / "pins.toml"
    result = pin("--pins", pins, "--name", "b", "--mcpb", path, "--sha256", f"SHA256:{digest}")
    assert result.code == 0, result.err
    assert f'source = "mcpb:sha256:{digest}"' in pins.read_text(encoding="utf-8")
