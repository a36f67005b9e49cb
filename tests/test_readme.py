"""The README shows what the code really does: the demo's output, runnable examples, the commands.

``python tests/test_readme.py --write`` runs the demo and pastes its output into the README. (The
rule tables moved to docs/model.md; tests/test_docs.py keeps them equal to the code.)
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BEGIN, END = "<!-- demo:begin -->\n", "<!-- demo:end -->"


def _demo_block() -> str:
    """The demo's real output as a Markdown block (its elapsed time varies, so it is masked)."""
    from otel_mcp_health.demo import main

    out = io.StringIO()
    assert main(out, io.StringIO()) == 0, out.getvalue()
    text = re.sub(r"(\d+ spans), \d+(\.\d+)? s\)", r"\1, … s)", out.getvalue())
    return f"```text\n{text}```\n"


def _readme_block(text: str) -> str:
    return text[text.index(BEGIN) + len(BEGIN) : text.index(END)]


def test_readme_sample_output_is_the_real_demo_output() -> None:
    pytest.importorskip("mcp")
    block = _readme_block(README.read_text(encoding="utf-8"))
    assert block == _demo_block(), "run: python tests/test_readme.py --write"


def test_readme_demo_legend_and_prose_fit_in_100_columns() -> None:
    block = _readme_block(README.read_text(encoding="utf-8"))
    rows = ("scenario ", "http: ", "in-process: ", "stdio: ", "```")
    prose = [line for line in block.splitlines() if not line.startswith(rows)]
    assert any(line.startswith("legend:") for line in prose)
    assert any(line.startswith("incidents opened:") for line in prose)
    for line in prose:  # table rows are as wide as their columns; everything else fits
        assert len(line) <= 100, line


def test_readme_first_two_commands_are_demo_and_test() -> None:
    text = README.read_text(encoding="utf-8")
    block = text[text.index("```sh\n") + 6 :]
    commands = [line.split("#")[0].strip() for line in block.splitlines()[:2]]
    assert commands == ["make demo", "make test"]


def test_zero_code_example_names_the_service() -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Zero-code") : text.index("### In code")]
    example = section[section.index("```sh\n") : section.index("```\n", section.index("```sh\n"))]
    assert "OTEL_SERVICE_NAME=" in example
    assert "opentelemetry-instrument python" in example
    assert "OTEL_EXPORTER_OTLP_TIMEOUT" in section


def test_readme_verifier_example_runs_and_prints_what_it_says(tmp_path: Path) -> None:
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


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    text = README.read_text(encoding="utf-8")
    start, stop = text.index(BEGIN) + len(BEGIN), text.index(END)
    README.write_text(text[:start] + _demo_block() + text[stop:], encoding="utf-8")
