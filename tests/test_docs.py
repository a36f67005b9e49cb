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

import pytest

from otel_mcp_health import attributes as A
from otel_mcp_health.check._words import NEXT_ACTION_WORDS, VERDICT_WORDS
from otel_mcp_health.cli import rules_markdown
from otel_mcp_health.core import calls, catalog, contract, layers
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


def _reason_constants(module: object) -> list[str]:
    source = Path(str(getattr(module, "__file__", ""))).read_text(encoding="utf-8")
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            target = node.targets[0]
            value = node.value.value
            if (
                isinstance(target, ast.Name)
                and target.id.isupper()
                and isinstance(value, str)
                and re.fullmatch(r"[a-z][a-z_]+", value)
            ):
                found.append(value)
    return found


def _reasons() -> str:
    lines = ["| reason code | judged by |", "|---|---|"]
    for module, where in (
        (catalog, "catalog (`mcp_health.catalog.reason`)"),
        (layers, "call layers (`mcp_health.reason`)"),
        (contract, "session contract (`mcp_health.reason`)"),
        (calls, "call rates"),
    ):
        lines += [f"| `{code}` | {where} |" for code in _reason_constants(module)]
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
            group = line[2:].strip()
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


def _metrics() -> str:
    source = (SRC / "metrics.py").read_text(encoding="utf-8")
    lines = ["| metric | kind | unit | description |", "|---|---|---|---|"]
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if not node.func.attr.startswith("create_"):
            continue
        first = node.args[0]
        assert isinstance(first, ast.Attribute)
        name = getattr(A, first.attr)
        kw = {
            k.arg: ast.literal_eval(k.value)
            for k in node.keywords
            if k.arg in {"unit", "description"}
        }
        kind = node.func.attr.removeprefix("create_").replace("observable_", "")
        lines.append(f"| `{name}` | {kind} | `{kw.get('unit', '')}` | {kw.get('description')} |")
    return "\n".join(lines) + "\n"


GENERATED: dict[str, dict[str, Callable[[], str]]] = {
    "docs/model.md": {
        "verdicts": _verdicts,
        "rules": rules_markdown,
        "next-actions": _next_actions,
        "reasons": _reasons,
    },
    "docs/attributes.md": {"attributes": _attributes, "metrics": _metrics},
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
_SWEPT = [
    *(SRC / "core").glob("*.py"),
    *(SRC / "check").glob("*.py"),
    *(SRC / "demo").glob("*.py"),
    SRC / "cli.py",
    SRC / "configurator.py",
]


def test_no_citation_of_the_private_spec_in_code_or_docs() -> None:
    offenders = []
    for path in [*_SWEPT, *_MARKDOWN]:
        if path.name in {"digest.py", "_jcs.py"}:
            continue  # they belong to another change
        text = path.read_text(encoding="utf-8")
        for pattern in (r"SPEC §", r"seed 00\d", r"\.\./shared", r"EVIDENCE\.md"):
            if re.search(pattern, text):
                offenders.append(f"{path.relative_to(ROOT)}: {pattern}")
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
