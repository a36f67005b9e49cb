"""The README shows the rule tables exactly as the code defines them, and the two commands."""

from __future__ import annotations

from pathlib import Path

from otel_mcp_health.cli import rules_markdown

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_rule_tables_are_generated_from_the_code() -> None:
    text = README.read_text(encoding="utf-8")
    begin, end = "<!-- rules:begin -->\n", "<!-- rules:end -->"
    section = text[text.index(begin) + len(begin) : text.index(end)]
    assert section == rules_markdown(), "run: otel-mcp-health rules, and paste it into README.md"


def test_readme_first_two_commands_are_demo_and_test() -> None:
    text = README.read_text(encoding="utf-8")
    block = text[text.index("```sh\n") + 6 :]
    commands = [line.split("#")[0].strip() for line in block.splitlines()[:2]]
    assert commands == ["make demo", "make test"]


def test_readme_verifier_example_runs_and_prints_what_it_says(tmp_path: Path) -> None:
    import subprocess
    import sys

    text = README.read_text(encoding="utf-8")
    marker = "<!-- example:verify -->\n```python\n"
    code = text[text.index(marker) + len(marker) :]
    code = code[: code.index("```")]
    expected = [line[2:] for line in code.splitlines() if line.startswith("# tools/call")]
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == expected
