"""One ``pip install`` of ``otel-mcp-health[instruments]`` beside each agent framework resolves.

For each of ten MCP-using agent frameworks, pip resolves this tree with its ``instruments`` extra
and the framework, as a user would type them (the framework never pinned), in one call
(``pip install --dry-run --report``, nothing installed). The report must hold the framework's
newest release, named in :data:`FRAMEWORKS`, within a minute: our OpenTelemetry ranges must
never make pip backtrack the framework to an old release or search for minutes. With the
former ``~= 1.45`` pins (and with ``< 2`` on the new floors: pip resolves upper-bounded
requirements first) ``google-adk`` came out as 1.14.1 and ``strands-agents`` as 0.2.1.

The table is updated on purpose when a framework releases (``pip index versions NAME``). The
resolutions need PyPI; they run in parallel, and pip keeps its HTTP cache (they pass cold too).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Seconds one resolution may take (the ``subprocess.run`` timeout too).
LIMIT_S: Final = 60
#: One resolution at a time: pip's resolver is CPU-bound and a cold run downloads whole wheels
#: (crewai-tools: about 350 MB where the index serves no metadata files), so parallel runs on a
#: 2-core machine measured the contention, not pip (crewai timed out at 60 s with 2 workers).
WORKERS: Final = 1


@dataclass(frozen=True)
class Framework:
    """What a user types beside ``otel-mcp-health[instruments]``, and what pip must pick."""

    #: The framework's distributions, with extras, never with a version.
    requirements: tuple[str, ...]
    #: Distribution -> its newest release: what the resolution must contain.
    newest: Mapping[str, str]
    #: What else a user must type for the framework to work (never the framework itself).
    beside: tuple[str, ...] = ()


#: The newest release of each framework (checked 2026-12-02 with `pip index versions`; update on
#: purpose when one releases).
FRAMEWORKS: Final[Mapping[str, Framework]] = {
    "openai-agents": Framework(("openai-agents",), {"openai-agents": "0.24.0"}),
    "pydantic-ai": Framework(("pydantic-ai-slim[mcp]",), {"pydantic-ai-slim": "2.68.0"}),
    "langchain": Framework(
        ("langchain-mcp-adapters", "langgraph"),
        {"langchain-mcp-adapters": "0.3.2", "langgraph": "1.2.24"},
    ),
    "google-adk": Framework(("google-adk[mcp]",), {"google-adk": "2.13.0"}),
    # Needs no hint (such as opentelemetry-instrumentation-threading): it caps mcp < 2.2 and pip
    # settles on mcp 2.1.1 quickly.
    "strands": Framework(("strands-agents",), {"strands-agents": "1.62.0"}),
    "llama-index": Framework(("llama-index-tools-mcp",), {"llama-index-tools-mcp": "0.6.0"}),
    # smolagents[mcp] does not cap mcp, and with mcp 2.x mcpadapt 0.1.19 fails at import
    # (`streamablehttp_client` is gone): a working install says mcp < 2.
    "smolagents": Framework(
        ("smolagents[mcp]",), {"smolagents": "1.26.0", "mcpadapt": "0.1.19"}, ("mcp < 2",)
    ),
    "agno": Framework(("agno[mcp]",), {"agno": "3.1.10"}),
    "mcp-use": Framework(("mcp-use",), {"mcp-use": "1.7.1"}),
    "crewai": Framework(("crewai-tools[mcp]",), {"crewai-tools": "1.15.30"}),
}


@dataclass(frozen=True)
class Resolution:
    """One pip run: its wall time and the versions it would install (empty if it failed)."""

    seconds: float
    installed: Mapping[str, str]
    error: str = ""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _resolve(framework: Framework, report: Path) -> Resolution:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--report",
        str(report),
        "--quiet",
        "--ignore-installed",
        f"{ROOT}[instruments]",
        *framework.requirements,
        *framework.beside,
    ]
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    started = time.monotonic()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=LIMIT_S, check=False, env=env
        )
    except subprocess.TimeoutExpired:
        return Resolution(time.monotonic() - started, {}, f"no resolution within {LIMIT_S} s")
    seconds = time.monotonic() - started
    if done.returncode != 0:
        return Resolution(seconds, {}, done.stderr[-3000:])
    items = json.loads(report.read_text(encoding="utf-8"))["install"]
    installed = {_canonical(i["metadata"]["name"]): i["metadata"]["version"] for i in items}
    return Resolution(seconds, installed)


@pytest.fixture(scope="module")
def resolutions(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Mapping[str, Resolution]:
    """Every selected framework's resolution, run in parallel once for the module."""
    selected = {
        item.callspec.params["name"]
        for item in request.session.items
        if item.path == Path(__file__) and hasattr(item, "callspec")
    } or set(FRAMEWORKS)
    folder = tmp_path_factory.mktemp("pip-reports")
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {
            name: pool.submit(_resolve, FRAMEWORKS[name], folder / f"{name}.json")
            for name in sorted(selected)
        }
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", sorted(FRAMEWORKS))
def test_one_pip_install_resolves_to_the_newest_release(
    name: str, resolutions: Mapping[str, Resolution]
) -> None:
    result = resolutions[name]
    found = {dist: result.installed.get(dist) for dist in FRAMEWORKS[name].newest}
    mcp, api = (result.installed.get(dist) for dist in ("mcp", "opentelemetry-api"))
    print(f"{name}: {found} (mcp {mcp}, opentelemetry-api {api}) in {result.seconds:.1f} s")
    assert not result.error, result.error
    assert found == dict(FRAMEWORKS[name].newest)
    assert "otel-mcp-health" in result.installed
    assert "mcp" in result.installed
    assert result.seconds < LIMIT_S


def test_the_table_never_pins_a_framework() -> None:
    """The framework is given bare (extras only): the assertion is that pip *chooses* its newest."""
    for framework in FRAMEWORKS.values():
        for requirement in framework.requirements:
            assert re.fullmatch(r"[A-Za-z0-9._-]+(\[[A-Za-z0-9._,-]+\])?", requirement)
        for requirement in framework.beside:
            assert _canonical(re.split(r"[\s\[<>=!~]", requirement)[0]) not in framework.newest
