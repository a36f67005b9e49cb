"""The ``otel-mcp-health`` CLI: classify, digest, rules; exit codes 0/1/2; never a traceback."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from otel_mcp_health.cli import main, rules_markdown

SEEDS = Path(__file__).resolve().parent / "fixtures" / "seeds"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_classify_seed_calls_json_and_summary() -> None:
    code, out, err = run("classify", str(SEEDS / "seed003_calls.jsonl"), "--json", "--summary")
    assert code == 1
    assert err == ""
    rows = [json.loads(line) for line in out.splitlines()]
    summary = rows.pop()
    assert summary == {
        "kind": "summary",
        "calls": 8,
        "protocolSuccess": 0.375,
        "verifiedOutcomes": 0.125,
    }
    assert set(rows[0]) == {
        "id",
        "kind",
        "firstFailedLayer",
        "layers",
        "verdict",
        "nextAction",
        "reason",
    }
    assert rows[0]["layers"] == {
        "transport": "failed",
        "authorization": "unobserved",
        "protocol": "unobserved",
        "execution": "unobserved",
        "outcome": "unobserved",
    }


def test_classify_text_summary_shows_both_rates() -> None:
    code, out, _ = run("classify", str(SEEDS / "seed003_calls.jsonl"), "--summary")
    assert code == 1
    assert "protocol-level success: 37.5 % (3/8)" in out
    assert "verified outcomes: 12.5 % (1/8)" in out


def test_catalog_and_session_json_shapes() -> None:
    _, out, _ = run(
        "classify",
        str(SEEDS / "seed000_catalog.jsonl"),
        str(SEEDS / "seed002_sessions.jsonl"),
        "--json",
    )
    rows = [json.loads(line) for line in out.splitlines()]
    assert set(rows[0]) == {
        "id",
        "kind",
        "verdict",
        "reason",
        "discoveredDigest",
        "clientDigest",
        "nextAction",
    }
    assert rows[0]["discoveredDigest"].startswith("sha256:")
    assert set(rows[-1]) == {
        "id",
        "kind",
        "verdict",
        "firstFailedLayer",
        "nextAction",
        "catalogVerdict",
        "reason",
    }


def test_exit_zero_only_when_everything_is_green(tmp_path: Path) -> None:
    lines = [
        line
        for line in (SEEDS / "seed000_catalog.jsonl").read_text().splitlines()
        if '"id": "baseline"' in line
    ]
    code, _, _ = run("classify", write(tmp_path, "green.jsonl", lines[0] + "\n"))
    assert code == 0


def test_bad_line_is_reported_with_line_and_field_and_others_still_classified(
    tmp_path: Path,
) -> None:
    text = '{"kind": "call", "id": "ok-one"}\n{"kind": "call", "id": "x", "transport": {}}\n'
    code, out, err = run("classify", write(tmp_path, "bad.jsonl", text), "--json")
    assert code == 2
    assert "bad.jsonl: line 2: field 'transport.outcome': expected" in err
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["ok-one"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["classify", "/nonexistent/file.jsonl"], "no such file"),
        (["digest", "/nonexistent/tools.json"], "no such file"),
        (["classify", "."], "is a directory"),
        (["frobnicate"], "invalid choice"),
        ([], "required"),
    ],
)
def test_usage_and_input_errors_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(*argv)
    assert code == 2
    assert message in err + capsys.readouterr().err


def test_digest_accepts_result_response_and_array(tmp_path: Path) -> None:
    tools = [
        {"name": "b", "inputSchema": {"type": "object"}, "_meta": {"x": 1}},
        {"name": "a", "inputSchema": {"type": "object"}},
    ]
    digests = set()
    for doc in (tools, {"tools": tools}, {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}):
        code, out, _ = run("digest", write(tmp_path, "t.json", json.dumps(doc)), "--json")
        assert code == 0
        row = json.loads(out)
        assert row["toolCount"] == 2
        assert row["projection"] == "v1"
        digests.add(row["digest"])
    assert len(digests) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"result": 3}', "expected a tools/list result"),
        ('[{"name": "a", "inputSchema": {"maximum": NaN}}]', "digest_unrepresentable"),
    ],
)
def test_digest_bad_input(tmp_path: Path, text: str, message: str) -> None:
    code, _, err = run("digest", write(tmp_path, "t.json", text))
    assert code == 2
    assert message in err


def test_rules_are_generated_from_the_tables() -> None:
    code, out, _ = run("rules")
    assert code == 0
    assert out == rules_markdown()
    assert "`signal_after_discovery`" in out
    assert "`effect_unknown`" in out


def test_python_dash_m_entry_point(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "otel_mcp_health",
            "classify",
            str(SEEDS / "seed003_calls.jsonl"),
            "--summary",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "verified outcomes: 12.5 %" in proc.stdout


# ---- the messages a new user meets ----------------------------------------------------------
def test_classify_on_an_empty_file_is_a_clear_error(tmp_path: Path) -> None:
    code, out, err = run("classify", write(tmp_path, "empty.jsonl", "\n"))
    assert code == 2
    assert "empty.jsonl: no evidence records (empty input)" in err
    assert out == ""  # no header without a verdict


def test_a_missing_file_does_not_stop_the_remaining_files(tmp_path: Path) -> None:
    good = write(tmp_path, "good.jsonl", '{"kind": "call", "id": "after-the-missing-one"}\n')
    code, out, err = run("classify", str(tmp_path / "missing.jsonl"), good, "--json")
    assert code == 2
    assert "missing.jsonl: no such file" in err
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["after-the-missing-one"]


def test_no_header_is_printed_before_a_read_fails(tmp_path: Path) -> None:
    code, out, err = run("classify", str(tmp_path / "missing.jsonl"))
    assert code == 2
    assert out == ""
    assert "no such file" in err


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"kind": "call", "id": "with-bom"}\n')
    code, out, err = run("classify", str(path), "--json")
    assert err == ""
    assert json.loads(out)["id"] == "with-bom"
    assert code == 1  # a bare call is judged (unverified), not rejected
    tools = tmp_path / "tools.json"
    tools.write_bytes(b'\xef\xbb\xbf{"tools": []}')
    assert run("digest", str(tools))[0] == 0


def test_a_line_error_names_the_line_once(tmp_path: Path) -> None:
    code, _, err = run("classify", write(tmp_path, "x.jsonl", '{"kind": "call"}\n{oops\n'))
    assert code == 2
    assert "x.jsonl: line 2: expected one JSON object per line" in err
    assert "line: " not in err


def test_digest_errors_name_the_file(tmp_path: Path) -> None:
    for text in ("{not json", '{"result": 3}', '[{"name": "a", "inputSchema": {"maximum": NaN}}]'):
        code, _, err = run("digest", write(tmp_path, "named.json", text))
        assert code == 2
        assert "named.json: " in err, err


def test_empty_standard_input_is_named_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code, out, err = run("classify", "-")
    assert code == 2
    assert out == ""
    assert "standard input: no evidence records (empty input)" in err
