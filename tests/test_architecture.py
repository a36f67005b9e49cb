"""The pure core stays pure: stdlib + rfc8785 (+ optional orjson), no OpenTelemetry, no mcp, no
clock, no I/O."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[1] / "src" / "otel_mcp_health" / "core"
MODULES = sorted(p.stem for p in CORE.glob("*.py") if p.stem != "__init__")
ALLOWED_THIRD_PARTY = {"rfc8785", "orjson"}  # orjson: the optional [fast] extra (core/jcs.py)
FORBIDDEN_CALLS = {
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "monotonic"),
    ("time", "perf_counter"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("date", "today"),
}
FORBIDDEN_NAMES = {"open", "input", "print"}
FORBIDDEN_MODULES = {
    "os",
    "io",
    "socket",
    "subprocess",
    "pathlib",
    "random",
    "secrets",
    "asyncio",
    "logging",
    "time",
}  # a threading.Lock is neither clock nor I/O


def test_core_imports_with_opentelemetry_and_mcp_blocked() -> None:
    imports = "; ".join(f"import otel_mcp_health.core.{m}" for m in MODULES)
    code = (
        "import sys; sys.modules['opentelemetry'] = None; sys.modules['mcp'] = None; "
        "sys.modules['wrapt'] = None; sys.modules['orjson'] = None; " + imports
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("module", MODULES)
def test_core_module_has_no_clock_reads_and_no_io(module: str) -> None:
    tree = ast.parse((CORE / f"{module}.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for name in names:
                top = name.split(".")[0]
                assert top not in FORBIDDEN_MODULES, f"{module} imports {name}"
                if top not in sys.stdlib_module_names and top != "otel_mcp_health":
                    assert top in ALLOWED_THIRD_PARTY, f"{module} imports {name}"
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                assert (func.value.id, func.attr) not in FORBIDDEN_CALLS, f"{module} reads a clock"
            if isinstance(func, ast.Name):
                assert func.id not in FORBIDDEN_NAMES, f"{module} calls {func.id}()"


#: Shell modules owned by the engine refactor: short functions, files of one concern
#: (the CLI, the verifiers and the demo have their own owners and limits).
SHELL = Path(__file__).parents[1] / "src" / "otel_mcp_health"
SHELL_MODULES = sorted(
    path
    for path in [
        *SHELL.glob("*.py"),
        *(SHELL / "instrumentation").glob("*.py"),
        *(SHELL / "_codec").glob("*.py"),
    ]
    if path.name not in {"cli.py", "verifiers.py", "configurator.py"}
)


@pytest.mark.parametrize("path", SHELL_MODULES, ids=[p.name for p in SHELL_MODULES])
def test_shell_functions_and_modules_stay_small(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert source.count("\n") <= 400, f"{path.name} has more than 400 lines"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            assert length <= 40, f"{path.name}: {node.name} has {length} lines"
