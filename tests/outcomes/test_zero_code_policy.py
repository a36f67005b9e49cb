"""Outcome verification without code: a zero-code agent, a policy file, verdicts at OTLP (issue 18).

``zero_code_agent.py`` has no telemetry code and registers no verifier. It runs in a real
subprocess under ``opentelemetry-instrument`` (``OTEL_PYTHON_CONFIGURATOR=mcp_health``, the
zero-code set-up of the README) with ``OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES`` naming a policy,
against real MCP servers, and exports OTLP/HTTP to a receiver on 127.0.0.1 that decodes the real
protobuf payloads (the harness of ``tests/processor/test_zero_code.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.integration.mcp_health_servers import CANARY_ARG
from tests.processor.test_zero_code import INSTRUMENT, Received, _handler

from otel_mcp_health import attributes as A

#: Run as a module from the repository root, so it imports ``tests.*`` like the tests do.
AGENT = ["-m", "tests.outcomes.zero_code_agent"]
ROOT = Path(__file__).resolve().parents[2]
POLICY = """
[[outcome]]
tool = "*"
read_only = true
verify = "not_required"

[[outcome]]
tool = "write_report*"
server = "destination-*"
verify = "file"
path = "{{workdir}}/{name}"
"""
POLICY_CANARY = "canary-policy-value-19ab"
#: One bad key among good entries: the whole file must be refused.
BROKEN = f"""{POLICY}
[[outcome]]
tool = "create_ticket"
verify = "file"
paht = "/srv/{POLICY_CANARY}/{{title}}"
"""


@dataclass
class AgentRun:
    """One run of the agent: its exit code, its stderr, the exported spans by name."""

    returncode: int
    stderr: str
    spans: dict[str, dict[str, Any]]

    def verdict(self, tool: str) -> tuple[Any, ...]:
        attrs = self.spans[f"tools/call {tool}"]
        return attrs[A.VERDICT], attrs.get(A.REASON), attrs.get(A.OUTCOME_METHOD)


@contextmanager
def _receiver() -> Iterator[tuple[str, Received]]:
    received = Received()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(received))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def run_agent(workdir: Path, policy: str | None) -> AgentRun:
    """Run the agent zero-code, with ``policy`` written to a file (``None``: no policy)."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    if policy is not None:
        path = workdir / "outcomes.toml"
        path.write_text(policy.replace("{{workdir}}", str(workdir)), encoding="utf-8")
        env["OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES"] = str(path)
    with _receiver() as (endpoint, received):
        env.update(
            OTEL_PYTHON_CONFIGURATOR="mcp_health",
            OTEL_SERVICE_NAME="zero-code-policy-agent",
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_METRICS_EXPORTER="none",
            OTEL_LOGS_EXPORTER="none",
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        )
        done = subprocess.run(
            [str(INSTRUMENT), sys.executable, *AGENT, str(workdir)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        with received.lock:
            spans = dict(received.spans)
    return AgentRun(done.returncode, done.stderr, spans)


@pytest.fixture(scope="module")
def with_policy(tmp_path_factory: pytest.TempPathFactory) -> AgentRun:
    run = run_agent(tmp_path_factory.mktemp("zero-code-policy"), POLICY)
    assert run.returncode == 0, run.stderr
    return run


def test_a_verified_call_is_healthy(with_policy: AgentRun) -> None:
    assert with_policy.verdict("write_report") == ("healthy", "ok", "file_digest")
    assert with_policy.spans["tools/call write_report"][A.OUTCOME_RESULT] == "passed"


def test_a_claimed_success_without_the_artefact_is_false_success(with_policy: AgentRun) -> None:
    broken = with_policy.spans["tools/call write_report_broken"]
    assert with_policy.verdict("write_report_broken") == (
        "false_success",
        "verifier_failed",
        "file_digest",
    )
    assert (broken[A.OUTCOME_RESULT], broken[A.OUTCOME_REASON]) == ("failed", "file_absent")
    assert (broken[A.CALL_FIRST_FAILED_LAYER], broken[A.NEXT_ACTION]) == (
        "outcome",
        "verify_destination",
    )


def test_an_unlisted_tool_is_unverified(with_policy: AgentRun) -> None:
    assert with_policy.verdict("create_ticket") == ("unverified", "no_outcome_verifier", None)
    assert with_policy.spans["tools/call create_ticket"][A.NEXT_ACTION] == "add_outcome_verifier"


def test_a_read_only_tool_under_not_required_is_healthy(with_policy: AgentRun) -> None:
    assert with_policy.verdict("lookup") == ("healthy", "outcome_not_required", "not_required")


def test_no_argument_or_path_leaves_the_agent(with_policy: AgentRun) -> None:
    exported = repr(with_policy.spans)
    assert CANARY_ARG not in exported
    assert CANARY_ARG not in with_policy.stderr


def test_a_broken_policy_keeps_the_agent_working_and_nothing_green(tmp_path: Path) -> None:
    without = run_agent(tmp_path / "without", None)
    broken = run_agent(tmp_path / "broken", BROKEN)
    assert broken.returncode == without.returncode == 0, broken.stderr
    for tool in ("write_report", "write_report_broken", "create_ticket"):
        assert (
            broken.verdict(tool)
            == without.verdict(tool)
            == (
                "unverified",
                "no_outcome_verifier",
                None,
            )
        )
    assert broken.verdict("lookup")[0] == "unverified"  # not even the not_required entry
    warnings = [line for line in broken.stderr.splitlines() if "outcome policy" in line]
    assert len(warnings) == 1, broken.stderr
    assert str(tmp_path / "broken" / "outcomes.toml") in warnings[0]
    assert "entry 3, key 'paht': unknown key" in warnings[0]
    assert POLICY_CANARY not in broken.stderr + repr(broken.spans)
