"""``otel-mcp-health pin`` from ``tools/list`` files: writing, the classified diff, ``--verify``
exit codes, corrupt pin files, hostile names, and a file that holds other servers' pins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_mcp_health.core.pins import parse_pins, render_pins
from tests.pin.pin_server import HOSTILE_NAMES, catalog
from tests.pin.pin_support import no_canary, pin, tools_file


@pytest.mark.parametrize("shape", ["result", "array", "rpc"])
def test_a_tools_list_file_in_any_shape_pins_the_same(tmp_path: Path, shape: str) -> None:
    reference = tmp_path / "reference.toml"
    assert (
        pin(
            "--pins", reference, "--name", "files", "--tools-file", tools_file(tmp_path, "base")
        ).code
        == 0
    )
    path = tmp_path / "pins.toml"
    result = pin(
        "--pins", path, "--name", "files", "--tools-file", tools_file(tmp_path, "base", shape)
    )
    assert result.code == 0, result.err
    assert path.read_bytes() == reference.read_bytes()
    assert 'source = "file"' in path.read_text(encoding="utf-8")


def test_hostile_tool_names_round_trip_and_no_description_or_schema_is_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pins.toml"
    result = pin("--pins", path, "--name", 'a]b"c\nd', "--tools-file", tools_file(tmp_path, "base"))
    assert result.code == 0, result.err
    text = path.read_text(encoding="utf-8")
    no_canary(text, result.out, result.err)
    (entry,) = parse_pins(text).servers
    assert entry.name == 'a]b"c\nd'
    assert {tool.name for tool in entry.tools} >= set(HOSTILE_NAMES)
    assert render_pins(parse_pins(text)) == text
    # printed names are one line each: the newline and the override are escaped
    assert '"new\\nline"' in result.out
    assert '"rtl\\u202eevil"' in result.out
    assert len(result.out.splitlines()) == 2 + len(catalog("base"))


def test_pinning_twice_is_byte_identical(tmp_path: Path) -> None:
    source = tools_file(tmp_path, "base")
    first, second = tmp_path / "first.toml", tmp_path / "second.toml"
    for path in (first, second):
        assert pin("--pins", path, "--name", "s", "--tools-file", source).code == 0
    assert first.read_bytes() == second.read_bytes()
    again = pin("--pins", first, "--update", "--accept", "--name", "s", "--tools-file", source)
    assert again.code == 0
    assert first.read_bytes() == second.read_bytes()


def test_update_keeps_every_other_server_entry_untouched(tmp_path: Path) -> None:
    path = tmp_path / "pins.toml"
    for name in ("zeta", "alpha", "mid"):
        assert (
            pin("--pins", path, "--name", name, "--tools-file", tools_file(tmp_path, "base")).code
            == 0
        )
    before = parse_pins(path.read_text(encoding="utf-8"))
    assert [s.name for s in before.servers] == ["alpha", "mid", "zeta"]
    changed = tools_file(tmp_path, "argument")
    pending = pin("--pins", path, "--update", "--name", "mid", "--tools-file", changed)
    assert pending.code == 1
    assert pending.out.splitlines()[:2] == [
        'server "mid" (address any, port any): 1 material, 0 cosmetic, 0 added, 0 removed',
        '  material  "lookup"  (inputSchema)',
    ]
    assert (
        pin("--pins", path, "--update", "--accept", "--name", "mid", "--tools-file", changed).code
        == 0
    )
    after = parse_pins(path.read_text(encoding="utf-8"))
    assert [s.name for s in after.servers] == ["alpha", "mid", "zeta"]
    assert after.servers[0] == before.servers[0]
    assert after.servers[2] == before.servers[2]
    assert after.servers[1] != before.servers[1]


def test_verify_exit_codes(tmp_path: Path) -> None:
    path = tmp_path / "pins.toml"
    assert (
        pin("--pins", path, "--name", "s", "--tools-file", tools_file(tmp_path, "base")).code == 0
    )

    def verify(variant: str, name: str = "s") -> int:
        return pin(
            "--pins",
            path,
            "--verify",
            "--name",
            name,
            "--tools-file",
            tools_file(tmp_path, variant),
        ).code

    assert verify("base") == 0
    assert verify("title") == 0  # cosmetic only
    assert verify("removed") == 0  # a removed tool alone does not drift
    assert verify("description") == 1
    assert verify("added") == 1
    assert verify("base", name="another") == 1  # unpinned
    unpinned = pin(
        "--pins", path, "--verify", "--name", "x", "--tools-file", tools_file(tmp_path, "base")
    )
    assert unpinned.out == (
        'unpinned (no_matching_pins): server "x": 0 material, 0 cosmetic, 0 added, 0 removed\n'
    )


@pytest.mark.parametrize(
    "content",
    [
        b'format = "otel-mcp-health/pins/1"\n[[server\n',
        b"\xff\xfe garbage",
        b"",
        b'format = "other/9"\n',
    ],
    ids=["bad-toml", "not-utf8", "empty", "wrong-format"],
)
def test_a_corrupt_pin_file_is_one_line_exit_2_and_never_overwritten(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "pins.toml"
    path.write_bytes(content)
    source = tools_file(tmp_path, "base")
    for extra in (["--verify"], [], ["--update", "--accept"]):
        result = pin("--pins", path, *extra, "--name", "s", "--tools-file", source)
        assert result.code == 2
        assert result.out == ""
        assert result.err.count("\n") == 1
        assert result.err.startswith(f"otel-mcp-health pin: {path}: corrupt pin file (")
        assert path.read_bytes() == content


def test_verify_with_a_missing_pin_file_is_exit_2(tmp_path: Path) -> None:
    result = pin(
        "--pins",
        tmp_path / "none.toml",
        "--verify",
        "--name",
        "s",
        "--tools-file",
        tools_file(tmp_path, "base"),
    )
    assert result.code == 2
    assert "none.toml: cannot read the pin file (no such file)" in result.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tools-file", "T"], "give --name"),
        (["--name", "s"], "give one source"),
        (
            ["--name", "s", "--tools-file", "T", "--url", "http://127.0.0.1:9/mcp"],
            "give one source",
        ),
        (["--name", "s", "--tools-file", "T", "--accept"], "--accept applies to --update only"),
        (["--header", "A=b", "--", "true"], "--header applies to --url only"),
        (["--max-pages", "0", "--", "true"], "--max-pages expects a positive number"),
        (["--timeout", "0", "--", "true"], "--timeout expects a positive number of seconds"),
        (["--update", "--verify", "--tools-file", "T"], ""),  # argparse: on sys.stderr
        (["--name", "s", "--tools-file", "T", "--sha256", "0" * 64], "--sha256 applies to --mcpb"),
    ],
)
def test_usage_errors_are_exit_2(tmp_path: Path, argv: list[str], message: str) -> None:
    source = str(tools_file(tmp_path, "base"))
    result = pin("--pins", tmp_path / "p.toml", *[source if a == "T" else a for a in argv])
    assert result.code == 2
    assert message in result.err
    assert not (tmp_path / "p.toml").exists()


def test_a_tools_file_that_is_not_a_catalog_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    for document in ({"tools": [{"description": "no name"}]}, {"nope": 1}, "[1,"):
        bad.write_text(document if isinstance(document, str) else json.dumps(document))
        result = pin("--pins", tmp_path / "p.toml", "--name", "s", "--tools-file", bad)
        assert result.code == 2, document
    assert not (tmp_path / "p.toml").exists()


def test_a_symlinked_pin_file_is_updated_through_the_link_keeping_its_mode(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    assert (
        pin("--pins", real, "--name", "s", "--tools-file", tools_file(tmp_path, "base")).code == 0
    )
    real.chmod(0o640)
    link = tmp_path / "link.toml"
    link.symlink_to(real)
    changed = tools_file(tmp_path, "title")
    assert (
        pin("--pins", link, "--update", "--accept", "--name", "s", "--tools-file", changed).code
        == 0
    )
    assert link.is_symlink()
    assert (real.stat().st_mode & 0o777) == 0o640
    assert pin("--pins", real, "--verify", "--name", "s", "--tools-file", changed).code == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_one_page_of_a_paginated_tools_list_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "page.json"
    page.write_text(json.dumps({"tools": catalog("base")[:2], "nextCursor": "2"}))
    result = pin("--pins", tmp_path / "p.toml", "--name", "s", "--tools-file", page)
    assert result.code == 2
    assert "one page of a paginated tools/list" in result.err
