"""A ``python`` verifier never re-imports the running script (issue 26).

``callable = "self_verifying_agent:verify"`` while ``python self_verifying_agent.py`` runs: the
module named is the running ``__main__`` module. Importing it under its own name would run the
script's top level a second time, on a verifier thread, and call a copy of ``verify``. Each run
is a real subprocess with the real policy loader and the real instrumented ``mcp.Client``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.processor.test_zero_code import INSTRUMENT

AGENT = Path(__file__).with_name("self_verifying_agent.py")
ROOT = Path(__file__).resolve().parents[2]
POLICY = """
[[outcome]]
tool = "deliver"
verify = "python"
callable = "self_verifying_agent:verify"
timeout = 5
"""


@pytest.mark.parametrize("mode", ["zero_code", "in_code", "python_m", "python_m_package"])
def test_a_verifier_in_the_running_script_is_the_running_module(tmp_path: Path, mode: str) -> None:
    policy = tmp_path / "outcomes.toml"
    policy.write_text(POLICY, encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    paths = [str(ROOT), *filter(None, [env.get("PYTHONPATH")])]
    if mode == "python_m_package":  # its directory on the path too: importable by both names
        paths.append(str(AGENT.parent))
    env |= {
        "PYTHONPATH": os.pathsep.join(paths),
        "OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES": str(policy),
        "OTEL_PYTHON_CONFIGURATOR": "mcp_health",
        "OTEL_TRACES_EXPORTER": "none",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
    }
    command, cwd = [sys.executable, str(AGENT), mode], tmp_path
    if mode == "zero_code":
        command = [str(INSTRUMENT), *command]
    if mode == "python_m":  # python -m self_verifying_agent, from its directory
        command, cwd = [sys.executable, "-m", AGENT.stem, "in_code"], AGENT.parent
    if mode == "python_m_package":  # python -m tests.outcomes.self_verifying_agent: same file
        command, cwd = [sys.executable, "-m", "tests.outcomes." + AGENT.stem, "in_code"], ROOT
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines.count("TOP-LEVEL") == 1, done.stdout  # the script's top level ran once
    assert "FLUSHED True" in lines
    seen = next(line for line in lines if line.startswith("SEEN "))
    assert seen.startswith("SEEN ['mcp-health-verifier-"), done.stdout  # this module's verify ran
