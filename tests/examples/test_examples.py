"""The examples in ``examples/`` run zero-code, as their docstrings say, and print verdicts.

They are the documentation's code (docs/frameworks.md links them), so they run in CI: each
example whose framework this interpreter has is run by ``examples/run.py`` (the same runner as
``make example``) under ``opentelemetry-instrument`` with the ``mcp_health`` configurator, and
the verdicts its exported spans carry are read from the runner's output.
"""

from __future__ import annotations

import http.server
import importlib.util
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "examples" / "run.py"
#: example -> the module its framework brings.
FRAMEWORK = {
    "plain_session": "mcp",
    "langchain_agent": "langchain_mcp_adapters",
    "pydantic_ai_agent": "pydantic_ai",
    "openai_agents_agent": "agents",
}
#: Every example runs the same plan against the demo server: the same three verdicts.
VERDICTS = [
    ("tools/call export_report", "healthy", "ok", "none"),
    ("tools/call export_report_broken", "false_success", "verifier_failed", "verify_destination"),
    ("tools/call create_ticket", "tool_failed", "is_error", "inspect_tool"),
]
#: The demo server needs mcp 2.x: the project's interpreter when this one has 1.x (noxfile.py).
SERVER = os.environ.get("MCP_HEALTH_SERVER_PYTHON", sys.executable)
HERE = [name for name, module in FRAMEWORK.items() if importlib.util.find_spec(module)]


def test_every_example_is_known_to_the_runner_and_the_docs() -> None:
    names = sorted(p.stem for p in (ROOT / "examples").glob("*.py") if p.stem != "run")
    assert names == sorted(FRAMEWORK)
    frameworks_doc = (ROOT / "docs" / "frameworks.md").read_text(encoding="utf-8")
    for name in names:
        assert f"../examples/{name}.py" in frameworks_doc, name


@pytest.mark.parametrize("name", HERE)
def test_the_example_prints_its_verdicts(name: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(RUNNER), name, "--python", sys.executable],
        env={**os.environ, "DEMO_SERVER_PYTHON": SERVER},
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    table = out[out.index("verdicts on the exported spans") :].splitlines()[2:]
    assert [tuple(re.split(r"\s{2,}", row)) for row in table] == VERDICTS, out
    assert "Traceback" not in proc.stderr


class _Sink(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint that records the paths it was sent to."""

    paths: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.paths.append(self.path)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


def test_otlp_also_exports_the_judged_spans() -> None:
    """``make example EXAMPLE_ARGS=--otlp``: the spans also reach an OTLP/HTTP endpoint."""
    sink = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{sink.server_port}"
        proc = subprocess.run(
            [sys.executable, str(RUNNER), "plain_session", "--python", sys.executable, "--otlp"],
            env={
                **os.environ,
                "DEMO_SERVER_PYTHON": SERVER,
                "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            },
            capture_output=True,
            text=True,
            check=False,
            timeout=180,
        )
    finally:
        sink.shutdown()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tools/call export_report_broken  false_success" in proc.stdout
    assert "/v1/traces" in _Sink.paths


def test_a_missing_framework_without_nox_is_said_in_one_line(tmp_path: Path) -> None:
    """``python examples/run.py NAME`` from an interpreter that has neither the framework nor nox
    (a venv with the wheel installed, README.md#install) names what to do; no traceback."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    proc = subprocess.run(
        [str(bare / "bin" / "python"), str(RUNNER), "openai_agents_agent"],
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            "NOX_ENVDIR": str(tmp_path / "no-venvs-yet"),
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr == (
        "run.py: openai_agents_agent needs the module 'agents', which this interpreter lacks, "
        "and nox, which creates the framework_openai_agents venv, is missing too: run it with "
        "make example NAME=openai_agents_agent, or pass --python an interpreter that has it\n"
    )
