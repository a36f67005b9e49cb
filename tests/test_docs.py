"""The documents in docs/ and the README agree with the code, and never link outside the repo.

Generated sections sit between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``;
``python tests/test_docs.py --write`` regenerates them from the code (the tests fail on drift).
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from otel_mcp_health.check._words import NEXT_ACTION_WORDS, VERDICT_WORDS
from otel_mcp_health.cli import rules_markdown
from otel_mcp_health.core.vocabulary import CatalogVerdict, NextAction, Verdict

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SRC = ROOT / "src" / "otel_mcp_health"


def _verdicts() -> str:
    lines = ["| verdict | in words |", "|---|---|"]
    lines += [f"| `{v.value}` | {VERDICT_WORDS[v]} |" for v in Verdict]
    return "\n".join(lines) + "\n"


def _next_actions() -> str:
    lines = ["| next action | what to do |", "|---|---|"]
    lines += [f"| `{a.value}` | {NEXT_ACTION_WORDS[a]} |" for a in NextAction]
    return "\n".join(lines) + "\n"


def _reasons() -> str:
    """Every member of the verdict reason enumeration, under the comment that groups it there."""
    lines = ["| reason code | judged by |", "|---|---|"]
    group = "every judge"
    source = (SRC / "core" / "reasons.py").read_text(encoding="utf-8")
    enumeration = source.split("class Reason(StrEnum):", 1)[1].split("\nclass ", 1)[0]
    for line in enumeration.splitlines():
        comment = re.fullmatch(r"    # (\w[\w ]*?)(?: \(.*\))?", line)
        member = re.fullmatch(r'    [A-Z_]+ = "([a-z_]+)"', line)
        if comment:
            group = comment.group(1)
        elif member:
            lines.append(f"| `{member.group(1)}` | {group} |")
    return "\n".join(lines) + "\n"


def _attribute_rows() -> list[tuple[str, str, str, str]]:
    """(name, value, group, notes) of every string constant in attributes.py, in order."""
    source = (SRC / "attributes.py").read_text(encoding="utf-8").splitlines()
    assigned = {
        node.lineno: node
        for node in ast.parse("\n".join(source)).body
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }
    rows, group, doc = [], "", []
    for number, line in enumerate(source, start=1):
        if line.startswith("#:"):
            doc.append(line[2:].strip())
        elif line.startswith("# ") and not line.startswith("# ---"):
            # A group heading may wrap onto the next comment lines.
            wrapped = number > 1 and source[number - 2].startswith("# ")
            wrapped = wrapped and not source[number - 2].startswith("# ---")
            group = f"{group} {line[2:].strip()}" if wrapped else line[2:].strip()
        elif number in assigned:
            node = assigned[number]
            assert isinstance(node.target, ast.Name)
            assert isinstance(node.value, ast.Constant)
            rows.append((node.target.id, str(node.value.value), group, " ".join(doc)))
        if not line.startswith("#:"):
            doc = [] if number in assigned or not line.strip() else doc
    return rows


def _public(text: str) -> str:
    """Drop citations of material outside the repository from a comment quoted in the docs."""
    text = re.sub(r"\s*\((?:SPEC|seed) [^)]*\)", "", text)
    text = re.sub(r"seed 00\d(?:'s)?", "the fixtures", text)
    return re.sub(r"SPEC §\d+(?:\.\d+)?(?: rule \d+)?", "docs/model.md", text)


def _attributes() -> str:
    lines = ["| attribute or value | constant | group | notes |", "|---|---|---|---|"]
    for name, value, group, doc in _attribute_rows():
        if name.startswith("METRIC_") or name == "DURATION_BUCKETS":
            continue
        cells = (f"`{value}`", f"`{name}`", _public(group), _public(doc))
        lines.append("| " + " | ".join(cell.replace("|", "/") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


class _RecordingMeter:
    """Stands in for a meter provider and its meter: records each instrument the code creates."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []

    def get_meter(self, *_args: Any, **_kwargs: Any) -> _RecordingMeter:
        return self

    def __getattr__(self, method: str) -> Callable[..., None]:
        kind = method.removeprefix("create_").replace("observable_", "")

        def create(name: str, *_args: Any, unit: str = "", description: str = "", **_: Any) -> None:
            self.rows.append((name, kind, unit, description))

        return create


def _metrics() -> str:
    from otel_mcp_health.processor.metrics import HealthMetrics

    meter = _RecordingMeter()
    HealthMetrics(meter, dict)  # type: ignore[arg-type]
    lines = ["| metric | kind | unit | description |", "|---|---|---|---|"]
    lines += [f"| `{n}` | {kind} | `{unit}` | {desc} |" for n, kind, unit, desc in meter.rows]
    return "\n".join(lines) + "\n"


#: The fold's single-field readings, stated in a sentence under the precedence table.
_OWN_FIELD_READINGS = ("output_schema", "outcome", "handshake", "page")


def _precedence() -> str:
    """core/precedence.py's table as the page shows it: a row per reading (``*``: first
    classification only), a cell per field it writes by the rule's initial; fields that every
    row treats alike share one column."""
    from otel_mcp_health.core.precedence import FIRST_CLASSIFICATION, PRECEDENCE

    rows = {name: cells for name, cells in PRECEDENCE.items() if name not in _OWN_FIELD_READINGS}
    fields = list(dict.fromkeys(field for cells in rows.values() for field in cells))
    columns: dict[tuple[str, ...], list[str]] = {}
    for field in fields:
        column = tuple(cells[field].name[0] if field in cells else "" for cells in rows.values())
        columns.setdefault(column, []).append(field)
    header = ["reading", *(", ".join(names) for names in columns.values())]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for index, name in enumerate(rows):
        label = f"{name} *" if name in FIRST_CLASSIFICATION else name
        cells = [column[index] for column in columns]
        lines.append("| " + " | ".join([label, *cells]) + " |")
    return "\n".join(lines) + "\n"


GENERATED: dict[str, dict[str, Callable[[], str]]] = {
    "docs/model.md": {
        "verdicts": _verdicts,
        "rules": rules_markdown,
        "next-actions": _next_actions,
        "reasons": _reasons,
    },
    "docs/attributes.md": {"attributes": _attributes, "metrics": _metrics},
    "docs/architecture.md": {"precedence": _precedence},
}


def _section(text: str, name: str) -> tuple[int, int]:
    begin, end = f"<!-- generated:{name} -->\n", f"<!-- /generated:{name} -->"
    start = text.index(begin) + len(begin)
    return start, text.index(end, start)


def write() -> None:
    """Regenerate every generated section in place."""
    for doc, sections in GENERATED.items():
        path = ROOT / doc
        text = path.read_text(encoding="utf-8")
        for name, make in sections.items():
            start, stop = _section(text, name)
            text = text[:start] + make() + text[stop:]
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("doc", "name"), [(doc, name) for doc, sections in GENERATED.items() for name in sections]
)
def test_generated_sections_match_the_code(doc: str, name: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    start, stop = _section(text, name)
    assert text[start:stop] == GENERATED[doc][name](), "run: python tests/test_docs.py --write"


def test_every_verdict_and_action_has_words() -> None:
    assert set(VERDICT_WORDS) == {*Verdict, CatalogVerdict.CONVERGED}
    assert set(NEXT_ACTION_WORDS) == set(NextAction)


_LINK = re.compile(r"\]\(([^)\s]+)\)")
_MARKDOWN = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("path", _MARKDOWN, ids=lambda p: p.name)
def test_relative_links_resolve_inside_the_repository(path: Path) -> None:
    for target in _LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        resolved = (path.parent / target.split("#")[0]).resolve()
        assert resolved.is_relative_to(ROOT), f"{path.name}: {target} leaves the repository"
        assert resolved.exists(), f"{path.name}: {target} does not exist"


#: Code that cites the project's docs only (the other modules follow in their own changes).
_SWEPT = [*SRC.rglob("*.py"), ROOT / "SECURITY.md", ROOT / "collector" / "README.md"]


def test_no_citation_of_the_private_spec_in_code_or_docs() -> None:
    patterns = (r"SPEC §", r"seed 00\d", r"\.\./shared", r"EVIDENCE\.md")
    texts = {path: path.read_text(encoding="utf-8") for path in [*_SWEPT, *_MARKDOWN]}
    offenders = [
        f"{path.relative_to(ROOT)}: {pattern}"
        for path, text in texts.items()
        for pattern in patterns
        if re.search(pattern, text)
    ]
    assert offenders == []


def test_every_example_in_the_evidence_format_parses_and_is_judged() -> None:
    from otel_mcp_health.core.records import EvidenceError, parse_lines
    from otel_mcp_health.core.report import judge

    text = (DOCS / "evidence-format.md").read_text(encoding="utf-8")
    examples = re.findall(r"```json\n(.*?)```", text, flags=re.DOTALL)
    assert len(examples) == 3
    kinds = []
    for example in examples:
        (parsed,) = parse_lines([" ".join(example.split())])
        assert not isinstance(parsed, EvidenceError), (str(parsed), example)
        row, _ = judge(parsed)
        kinds.append(row["kind"])
    assert kinds == ["catalog", "call", "session"]


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    write()


def test_configuration_lists_every_variable_and_check_option() -> None:
    import argparse

    from otel_mcp_health import environment_variables
    from otel_mcp_health.check import add_arguments

    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    variables = [v for v in vars(environment_variables) if v.startswith("OTEL_INSTRUMENTATION_")]
    assert variables
    for variable in variables:
        assert f"`{variable}`" in text, variable
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    for action in parser._actions:
        for option in action.option_strings:
            if option not in {"-h", "--help"}:
                assert f"`{option}" in text, option


def _anchors(path: Path) -> set[str]:
    """GitHub's heading slugs plus explicit ``<a id="...">`` anchors of one Markdown file."""
    text = path.read_text(encoding="utf-8")
    slugs = {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.*)$", text, re.MULTILINE)
    }
    return slugs | set(re.findall(r'<a id="([\w\-]+)"></a>', text))


def test_every_cited_anchor_exists() -> None:
    """``docs/model.md#layers`` in a comment, a docstring or a document leads somewhere."""
    documents = {p.name: _anchors(p) for p in [*(ROOT / "docs").glob("*.md"), ROOT / "SECURITY.md"]}
    citing = [*SRC.rglob("*.py"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    citing += [ROOT / "SECURITY.md", ROOT / "collector" / "README.md"]
    broken = [
        f"{path.relative_to(ROOT)}: {name}#{anchor}"
        for path in citing
        for name, anchor in re.findall(r"([\w\-]+\.md)#([\w\-]+)", path.read_text("utf-8"))
        if name in documents and anchor not in documents[name]
    ]
    assert not broken, sorted(set(broken))
