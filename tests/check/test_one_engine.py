"""``check`` is a thin shell: public API and attribute names in, verdicts read from spans out.

It must never judge by itself (no classifier import) nor reach into the shell's private modules
(the instrumentation and the processor may be rewritten; their public names stay). The same holds
for the client side it runs on (``clientside/``: options, pipeline, driver, report), which the
other commands share.
"""

from __future__ import annotations

import ast
from pathlib import Path

import otel_mcp_health

PACKAGE = Path(otel_mcp_health.__file__).parent
CHECK = (PACKAGE / "check", PACKAGE / "clientside")
ALLOWED = {
    "otel_mcp_health",  # the public API (lazy exports)
    "otel_mcp_health.attributes",
    "otel_mcp_health.core.vocabulary",
    "otel_mcp_health.check",
    "otel_mcp_health.clientside",
}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("otel_mcp_health")}


def test_check_uses_only_public_names_and_never_a_classifier() -> None:
    for path in sorted(p for room in CHECK for p in room.glob("*.py")):
        for module in _imports(path):
            assert module in ALLOWED or module.startswith(
                ("otel_mcp_health.check.", "otel_mcp_health.clientside.")
            ), (
                path.name,
                module,
            )


def test_every_public_name_check_uses_is_exported() -> None:
    for path in sorted(p for room in CHECK for p in room.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "otel_mcp_health":
                for alias in node.names:
                    if alias.name != "attributes":  # the module of names, imported as A
                        assert alias.name in otel_mcp_health.__all__, alias.name
