"""docs/architecture.md is a map of the code that stays true: every module, package and name it
cites exists, and its floors draw exactly the rooms that tests/test_architecture.py enforces."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.test_architecture import LAYERS

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
PACKAGE = ROOT / "src" / "otel_mcp_health"
MODULES = [*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
#: Every backticked token of the page.
CITED = re.findall(r"`([^`\n]+)`", DOC)


def _files_ending(suffix: str) -> list[Path]:
    return [p for p in MODULES if p.as_posix().endswith("/" + suffix)]


def _defines(path: Path, name: str) -> bool:
    """Whether the module defines ``name`` at its top level (a function, class or assignment)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return True
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


def test_every_cited_module_exists() -> None:
    files = [token.split()[0] for token in CITED if token.split()[0].endswith(".py")]
    assert len(files) > 30, "the page no longer cites modules: the test reads the wrong page"
    missing = sorted({f for f in files if not _files_ending(f)})
    assert not missing, f"docs/architecture.md cites modules that do not exist: {missing}"


def test_every_cited_package_exists() -> None:
    packages = {t for t in CITED if re.fullmatch(r"[a-z_]+/", t)}
    assert {"core/", "instrumentation/", "processor/"} <= packages
    missing = sorted(p for p in packages if not (PACKAGE / p).is_dir())
    assert not missing, f"docs/architecture.md cites packages that do not exist: {missing}"


def test_every_cited_module_attribute_exists() -> None:
    """``_request_hooks.finish``, ``_compat.HOOKS_2X``: the module exists and defines the name."""
    cited = {
        (module, name)
        for token in CITED
        if (m := re.fullmatch(r"(_?[a-z_]+)\.([A-Za-z_][A-Za-z0-9_]*)", token))
        for module, name in [m.groups()]
        if name != "py" and _files_ending(f"{module}.py")
    }
    assert len(cited) >= 3
    undefined = sorted(
        f"{module}.{name}"
        for module, name in cited
        if not any(_defines(path, name) for path in _files_ending(f"{module}.py"))
    )
    assert not undefined, f"docs/architecture.md cites names no module defines: {undefined}"


def test_the_floors_draw_every_room_of_the_layering_test() -> None:
    block = DOC.split("## Floors and rooms", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    drawn = {name.rstrip("/") for name in re.findall(r"[_a-z][_a-z]*/?", block)}
    drawn -= {"floor", "pure", "stdlib", "rfc8785", "env", "vars", "keyword", "options"}
    rooms = set(LAYERS)
    assert rooms <= drawn, f"rooms the page does not draw: {sorted(rooms - drawn)}"
