"""What a newcomer reads first says what is true: install, the first examples, times, prerequisites.

Each test pins one statement a first-hour user acts on (docs/check.md's first command, the
README's install paths, the mcp line the in-code example needs, the demo's incidents, the
measured time of ``make check``, what ``make test`` needs, the collector they already run).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def test_the_first_check_example_watches_the_reference_servers_signal() -> None:
    """The reference server announces list_changed right after the handshake: without --watch
    the first example of docs/check.md exits 1 (stale catalog)."""
    text = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    block = text[text.index("```sh\n") + 6 :]
    first = block.splitlines()[0]
    assert "server-everything" in first
    assert "--watch" in first


def test_the_in_code_example_says_which_mcp_line_it_needs() -> None:
    section = _section(README, "### In code, with outcome verifiers")
    prose = section[: section.index("<!-- example:verify -->")]
    assert "**mcp 2.x**" in prose
    assert "examples/plain_session.py" in prose  # the twin that runs on both lines


def test_the_demo_legend_explains_incidents_against_verdicts() -> None:
    demo = README[README.index("<!-- demo:begin -->") : README.index("<!-- demo:end -->")]
    assert "incidents opened counts incidents, not verdicts" in demo
    assert "docs/model.md#incidents" in demo


def test_make_check_states_its_measured_time() -> None:
    assert "under a minute" not in README
    assert "under a minute" not in MAKEFILE
    development = _section(README, "## Development")
    assert re.search(
        r"`make check` is the fast one\s+with nothing to provision \(about 65 s", development
    )


def test_the_development_section_names_every_prerequisite_and_the_times() -> None:
    development = _section(README, "## Development")
    for needed in ("Go", "root", "apt-get", "8 GB", "Node.js", "check-prerequisites.sh"):
        assert needed in development, needed
    assert "53 min" in development
    assert "warm" in development


def test_the_readme_shows_how_to_install_before_the_package_is_published() -> None:
    install = _section(README, "## Install")
    assert "pip install './otel-mcp-health[instruments]'" in install  # a checkout
    assert "python -m build" in install
    assert "dist/*.whl)[instruments]" in install  # a built wheel
    assert "@ git+" in install  # a git URL
    zero_code = _section(README, "## Instrument an application")
    assert 'see "Install" above' in zero_code


def test_the_docs_name_the_stock_collector_that_runs_the_configs() -> None:
    collector = (ROOT / "collector" / "README.md").read_text(encoding="utf-8")
    assert "`otelcol-contrib` v0.161.0" in collector
    assert "otelcol-contrib-manifest-v0.159.0.yaml" in collector
    assert "Go module proxy here serves" not in collector
    assert "`otelcol-contrib`** v0.161.0 or later" in README
