"""A command that needs the MCP SDK says which module is missing and exits with its setup code,
instead of a traceback; an import error of anything else is not hidden (clientside/command_line)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_RUN = (
    "import sys\n"
    "sys.modules[{blocked!r}] = None\n"
    "from otel_mcp_health.cli import main\n"
    "sys.exit(main({argv!r}))\n"
)


def _run(blocked: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    code = _RUN.format(blocked=blocked, argv=argv)
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=cwd,
    )


@pytest.mark.parametrize(
    ("command", "argv", "code"),
    [
        ("check", ["check", "--url", "http://127.0.0.1:9/mcp"], 2),
        ("demo", ["demo"], 2),
    ],
)
def test_a_missing_sdk_module_is_named(
    command: str, argv: list[str], code: int, tmp_path: Path
) -> None:
    proc = _run("mcp", argv, tmp_path)
    assert proc.returncode == code, proc.stderr
    assert proc.stderr == (
        f"otel-mcp-health {command} needs the MCP SDK (module 'mcp' is missing): "
        "pip install 'otel-mcp-health[instruments]'\n"
    )
    assert proc.stdout == ""


def test_the_probe_names_a_missing_sdk_module(tmp_path: Path) -> None:
    config = tmp_path / "probe.toml"
    config.write_text(
        '[module.m]\n[[target]]\nname = "t"\ntransport = "streamable_http"\n'
        'url = "http://127.0.0.1:9/mcp"\n',
        encoding="utf-8",
    )
    proc = _run("mcp", ["probe", "--config", str(config), "--listen", "127.0.0.1:0"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (
        "otel-mcp-health probe needs the MCP SDK (module 'mcp' is missing): "
        "pip install 'otel-mcp-health[instruments]'\n"
    )


def test_an_import_error_of_another_module_is_not_hidden(tmp_path: Path) -> None:
    proc = _run("otel_mcp_health.check._words", ["check", "--url", "http://127.0.0.1:9/"], tmp_path)
    assert proc.returncode == 1  # the interpreter's exit code for an uncaught exception
    assert "ModuleNotFoundError: import of otel_mcp_health.check._words halted" in proc.stderr
    assert "needs the MCP SDK" not in proc.stderr
