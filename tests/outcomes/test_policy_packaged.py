"""Packaged verifiers: a distribution ships a verifier in the ``otel_mcp_health.verifiers``
entry-point group and a policy names it (``verify = "entry_point"``, ``name = ...``).

The distribution is real: ``verifier_package/`` (a ``pyproject.toml`` and one module) is built
and installed by pip (no dependencies, no build isolation: no network) into a temporary
directory put on ``sys.path``, and found through ``importlib.metadata`` like any installed one.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from tests.outcomes.destinations import build_destination_server
from tests.support.processor_helpers import instrumented_pipeline

from otel_mcp_health import OutcomePolicy, OutcomePolicyError
from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts
from otel_mcp_health.verifiers import CallContext, Verifier, clear_verifiers, run_verifier

PACKAGE = Path(__file__).with_name("verifier_package")
POLICY = """
[[outcome]]
tool = "write_report*"
verify = "entry_point"
name = "report_written"
timeout = 2
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(PACKAGE),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return target


@pytest.fixture
def installed(site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(site))
    clear_verifiers()
    yield site
    clear_verifiers()
    sys.modules.pop("mcp_health_test_verifiers", None)


def _policy(tmp_path: Path, text: str) -> OutcomePolicy:
    path = tmp_path / "outcomes.toml"
    path.write_text(text, encoding="utf-8")
    return OutcomePolicy.load(path)


def test_the_distribution_is_installed_with_its_entry_point(installed: Path) -> None:
    (dist_info,) = installed.glob("mcp_health_test_verifiers-1.0.0.dist-info")
    assert "[otel_mcp_health.verifiers]" in (dist_info / "entry_points.txt").read_text()


@pytest.mark.anyio
async def test_a_packaged_verifier_named_by_a_policy_judges_the_call(
    installed: Path, tmp_path: Path
) -> None:
    _policy(tmp_path, POLICY).install()
    with instrumented_pipeline() as pipeline:
        async with Client(build_destination_server()) as client:
            await client.list_tools()
            for tool in ("write_report", "write_report_broken"):
                path = str(tmp_path / f"{tool}.txt")
                await client.call_tool(tool, {"path": path, "content": "Q3"})
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
        spans = {span.name: dict(span.attributes or {}) for span in pipeline.spans()}
    good, bad = spans["tools/call write_report"], spans["tools/call write_report_broken"]
    assert (good[A.OUTCOME_METHOD], good[A.VERDICT]) == ("report_written", "healthy")
    assert (bad[A.OUTCOME_METHOD], bad[A.OUTCOME_RESULT], bad[A.VERDICT]) == (
        "report_written",
        "failed",
        "false_success",
    )


def test_an_entry_point_no_distribution_has_refuses_the_file(
    installed: Path, tmp_path: Path
) -> None:
    with pytest.raises(OutcomePolicyError) as raised:
        _policy(tmp_path, POLICY.replace("report_written", "report_sent"))
    assert str(raised.value.problems[0]).startswith("entry 1, key 'name': no installed")


def test_without_the_distribution_the_name_is_unknown(tmp_path: Path) -> None:
    with pytest.raises(OutcomePolicyError):
        _policy(tmp_path, POLICY)


def test_an_entry_point_that_is_not_a_function_is_unavailable(
    installed: Path, tmp_path: Path
) -> None:
    policy = _policy(tmp_path, POLICY.replace("report_written", "not_a_function"))
    entry = policy.match("write_report")
    assert entry is not None
    assert isinstance(entry.rule.choice, Verifier)
    receipt = run_verifier(entry.rule.choice, CallContext(tool="write_report", arguments={}))
    assert (receipt.result.value, receipt.reason) == ("inconclusive", "verifier_unavailable")
    with pytest.raises(OutcomePolicyError) as raised:  # what `otel-mcp-health outcomes` says
        OutcomePolicy.load(tmp_path / "outcomes.toml", strict=True)
    assert "entry 1, key 'name': cannot be imported now (not callable)" in str(raised.value)
