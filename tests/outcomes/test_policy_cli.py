"""``otel-mcp-health outcomes FILE``: check a policy offline (exit 0 valid, 2 invalid)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from otel_mcp_health.cli import main

SECRET = "canary-cli-path-4d21"
POLICY = f"""
[[outcome]]
tool = "*"
read_only = true
verify = "not_required"

[[outcome]]
tool = "export_report"
server = "reports-*"
verify = "file"
path = "/srv/{SECRET}/{{name}}.csv"

[[outcome]]
tool = "notify_*"
verify = "python"
callable = "tests.outcomes.policy_verifiers:report_exists"
"""


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["outcomes", *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "outcomes.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_valid_policy_prints_what_each_entry_matches(tmp_path: Path) -> None:
    code, out, err = run(write(tmp_path, POLICY))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].endswith(
        "valid, 3 entries (the first match wins; a tool registered in code keeps its own verifier)"
    )
    assert lines[1:] == [
        "entry 1: tool '*', read-only tools -> not_required",
        (
            "entry 2: tool 'export_report', server 'reports-*' -> file (receipt method "
            "file_digest); reads arguments name"
        ),
        "entry 3: tool 'notify_*' -> python (receipt method callable)",
    ]
    assert SECRET not in out  # a template's text is not shown, only the arguments it reads


def test_which_entry_decides_for_a_tool(tmp_path: Path) -> None:
    path = write(tmp_path, POLICY)
    assert run(path, "--tool", "lookup", "--read-only")[1].endswith(
        "tool 'lookup': entry 1 decides (not_required)\n"
    )
    assert run(path, "--tool", "export_report", "--server", "reports-eu")[1].endswith(
        "tool 'export_report': entry 2 decides (file)\n"
    )
    assert run(path, "--tool", "export_report")[1].endswith(
        "tool 'export_report': no entry matches\n"
    )


def test_an_invalid_policy_prints_every_problem_and_exits_2(tmp_path: Path) -> None:
    text = POLICY.replace('verify = "file"', 'verify = "fiel"').replace(
        'callable = "tests.outcomes.policy_verifiers:report_exists"', 'callabel = "x:y"'
    )
    path = write(tmp_path, text)
    code, out, err = run(path)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        (
            f"otel-mcp-health outcomes: {path}: entry 2, key 'verify': unknown verifier kind "
            "(expected not_required, file, http, sqlite, python, entry_point)"
        ),
        f"otel-mcp-health outcomes: {path}: entry 3, key 'callabel': unknown key",
        f"otel-mcp-health outcomes: {path}: entry 3, key 'callable': missing",
    ]
    assert SECRET not in err


def test_a_callable_that_cannot_be_imported_is_invalid_offline(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        POLICY.replace("tests.outcomes.policy_verifiers:report_exists", "no_such_mod:check"),
    )
    code, _, err = run(path)
    assert code == 2
    assert "entry 3, key 'callable': cannot be imported now (ModuleNotFoundError)" in err


def test_a_missing_file_exits_2(tmp_path: Path) -> None:
    code, _, err = run(str(tmp_path / "absent.toml"))
    assert code == 2
    assert err == f"otel-mcp-health outcomes: {tmp_path / 'absent.toml'}: no such file\n"


def test_the_real_command(tmp_path: Path) -> None:
    path = write(
        tmp_path, POLICY.replace("tests.outcomes.policy_verifiers:report_exists", "json:dumps")
    )
    done = subprocess.run(
        [sys.executable, "-m", "otel_mcp_health", "outcomes", path],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "valid, 3 entries" in done.stdout
