"""The examples in ``examples/`` run zero-code, as their docstrings say, and print verdicts.

They are the documentation's code (docs/frameworks.md links them), so they run in CI: each
example whose framework this interpreter has is run by ``examples/run.py`` (the same runner as
``make example``) under ``opentelemetry-instrument`` with the ``mcp_health`` configurator, and
the verdicts its exported spans carry are read from the runner's output.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

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
HERE = [name for name, module in FRAMEWORK.items() if importlib.util.find_spec(module)]


def test_every_example_is_known_to_the_runner_and_the_docs() -> None:
    names = sorted(p.stem for p in (ROOT / "examples").glob("*.py") if p.stem != "run")
    assert names == sorted(FRAMEWORK)
    frameworks_doc = (ROOT / "docs" / "frameworks.md").read_text(encoding="utf-8")
    for name in names:
        assert f"../examples/{name}.py" in frameworks_doc, name


@pytest.mark.parametrize("name", HERE)
def test_the_example_prints_its_verdicts(name: str) -> None:
    # The demo server needs mcp 2.x: the project's interpreter when this one has 1.x.
    server = os.environ.get("MCP_HEALTH_SERVER_PYTHON", sys.executable)
    proc = subprocess.run(
        [sys.executable, str(RUNNER), name, "--python", sys.executable],
        env={**os.environ, "DEMO_SERVER_PYTHON": server},
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
