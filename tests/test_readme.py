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
