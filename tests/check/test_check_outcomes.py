"""``check --outcomes FILE``: the call's verifier from an outcome policy (issue 18).

``--verify-file``, ``--verify-http`` and ``--outcome-not-required`` are shorthands for a policy of
one entry; ``--outcomes`` reads a whole file, the one an agent names with
``OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES``. Against our stdio server: ``write_file`` writes the
file it promises, ``write_nothing`` claims to and does not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.check.check_servers import CANARY_ARG
from tests.check.check_support import check, stdio

#: The file's directory is literal (written in by ``_policy``); the argument names the file.
POLICY = """
[[outcome]]
tool = "write_*"
verify = "file"
path = "{{dir}}/{name}"
"""


def _policy(tmp_path: Path, text: str = POLICY) -> str:
    path = tmp_path / "outcomes.toml"
    path.write_text(text.replace("{{dir}}", str(tmp_path)), encoding="utf-8")
    return str(path)


def _call(tmp_path: Path, tool: str, *options: str) -> tuple[int, dict[str, object]]:
    target = tmp_path / f"{tool}-{CANARY_ARG}.txt"
    arguments = json.dumps({"path": str(target), "name": target.name, "content": CANARY_ARG})
    result = check("--json", "--call", tool, "--args", arguments, *options, *stdio("healthy"))
    assert CANARY_ARG not in result.out + result.err
    return result.code, result.json()


def test_the_policy_file_verifies_the_call(tmp_path: Path) -> None:
    code, report = _call(tmp_path, "write_file", "--outcomes", _policy(tmp_path))
    assert code == 0, report
    assert (report["verdict"], report["call"]["outcomeMethod"]) == ("healthy", "file_digest")
    code, report = _call(tmp_path, "write_nothing", "--outcomes", _policy(tmp_path))
    assert code == 1
    assert (report["verdict"], report["nextAction"]) == ("false_success", "verify_destination")


def test_a_tool_the_policy_does_not_list_is_unverified(tmp_path: Path) -> None:
    text = POLICY.replace('"write_*"', '"export_*"')
    code, report = _call(tmp_path, "write_file", "--outcomes", _policy(tmp_path, text))
    assert code == 1
    assert (report["verdict"], report["reason"]) == ("unverified", "no_outcome_verifier")


def test_a_missing_argument_is_inconclusive(tmp_path: Path) -> None:
    text = POLICY.replace("{name}", "{file}")
    code, report = _call(tmp_path, "write_file", "--outcomes", _policy(tmp_path, text))
    assert code == 1
    assert (report["verdict"], report["reason"]) == ("unverified", "verifier_inconclusive")


def test_the_shorthand_path_is_literal(tmp_path: Path) -> None:
    braces = tmp_path / "{path}"  # a shorthand's path is never a template
    braces.mkdir()
    target = braces / "out.txt"
    arguments = json.dumps({"path": str(target), "content": "x"})
    result = check(
        "--json",
        "--call",
        "write_file",
        "--args",
        arguments,
        "--verify-file",
        str(target),
        *stdio("healthy"),
    )
    assert result.code == 0, result.out
    assert result.json()["call"]["outcomeMethod"] == "file_digest"


def test_a_bad_policy_is_a_usage_error_naming_entry_and_key(tmp_path: Path) -> None:
    path = _policy(tmp_path, POLICY.replace("path =", f'paht = "{CANARY_ARG}"\nother ='))
    result = check("--call", "write_file", "--outcomes", path, *stdio("healthy"))
    assert result.code == 2
    assert f"--outcomes {path}: entry 1, key 'paht': unknown key" in result.err
    assert CANARY_ARG not in result.err


def test_outcomes_needs_a_call_and_excludes_the_shorthands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _policy(tmp_path)
    assert "need --call" in check("--outcomes", path, *stdio("healthy")).err
    both = check("--call", "t", "--outcomes", path, "--verify-file", "/x", *stdio("healthy"))
    assert both.code == 2
    assert "not allowed with argument --outcomes" in capsys.readouterr().err  # argparse's own
