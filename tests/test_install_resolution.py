"""One ``pip install`` of ``otel-mcp-health[instruments]`` beside each agent framework resolves.

For each of ten MCP-using agent frameworks, pip resolves this tree with its ``instruments`` extra
and the framework, as a user would type them (the framework never pinned), in one call
(``pip install --dry-run --report``, nothing installed). Just before, the test asks the same
index which release of each framework distribution is the newest for this Python
(``pip index versions --json``). The resolution must land on that release, within a minute: our
OpenTelemetry ranges must never make pip backtrack the framework to an old release or search for
minutes. With the former ``~= 1.45`` pins (and with ``< 2`` on the new floors: pip resolves
upper-bounded requirements first) ``google-adk`` came out as 1.14.1 and ``strands-agents`` as
0.2.1. A framework's release moves both sides at once: it never turns the test red by itself.

The resolutions need PyPI; they run one at a time, and pip keeps its HTTP cache (they pass cold
too). The check itself is proven offline on a local ``--find-links`` index of small fake wheels:
a newer release passes, a resolution that backtracks fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import zipfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
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
    #: The distributions whose newest release the resolution must contain.
    newest: tuple[str, ...]
    #: What else a user must type for the framework to work (never the framework itself).
    beside: tuple[str, ...] = ()


FRAMEWORKS: Final[Mapping[str, Framework]] = {
    "openai-agents": Framework(("openai-agents",), ("openai-agents",)),
    "pydantic-ai": Framework(("pydantic-ai-slim[mcp]",), ("pydantic-ai-slim",)),
    "langchain": Framework(
        ("langchain-mcp-adapters", "langgraph"), ("langchain-mcp-adapters", "langgraph")
    ),
    "google-adk": Framework(("google-adk[mcp]",), ("google-adk",)),
    # Needs no hint (such as opentelemetry-instrumentation-threading): it caps mcp < 2.2 and pip
    # settles on mcp 2.1.1 quickly.
    "strands": Framework(("strands-agents",), ("strands-agents",)),
    "llama-index": Framework(("llama-index-tools-mcp",), ("llama-index-tools-mcp",)),
    # smolagents[mcp] does not cap mcp, and with mcp 2.x mcpadapt 0.1.19 fails at import
    # (`streamablehttp_client` is gone): a working install says mcp < 2.
    "smolagents": Framework(("smolagents[mcp]",), ("smolagents", "mcpadapt"), ("mcp < 2",)),
    "agno": Framework(("agno[mcp]",), ("agno",)),
    "mcp-use": Framework(("mcp-use",), ("mcp-use",)),
    "crewai": Framework(("crewai-tools[mcp]",), ("crewai-tools",)),
}


@dataclass(frozen=True)
class Resolution:
    """One pip run: its wall time and the versions it would install (empty if it failed)."""

    seconds: float
    installed: Mapping[str, str]
    error: str = ""
    #: Distribution -> the newest release the index offered this Python just before.
    offered: Mapping[str, str] = field(default_factory=dict)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pip(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    command = [sys.executable, "-m", "pip", *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False, env=env
    )


def newest_release(dist: str, index: tuple[str, ...] = ()) -> str:
    """The newest release of ``dist`` the index offers this interpreter (pre-releases and
    releases that exclude this Python left out, as pip's resolver leaves them out)."""
    done = _pip("index", "versions", "--json", *index, dist, timeout=LIMIT_S)
    if done.returncode != 0:
        raise RuntimeError(f"pip index versions {dist}: {done.stderr[-1000:]}")
    return str(json.loads(done.stdout)["latest"])


def resolve(
    requirements: tuple[str, ...],
    newest: tuple[str, ...],
    report: Path,
    index: tuple[str, ...] = (),
) -> Resolution:
    """Ask the index for each of ``newest``'s releases, then resolve ``requirements`` once."""
    offered = {_canonical(dist): newest_release(dist, index) for dist in newest}
    command = ["install", "--dry-run", "--report", str(report), "--quiet", "--ignore-installed"]
    started = time.monotonic()
    try:
        done = _pip(*command, *index, *requirements, timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        seconds = time.monotonic() - started
        return Resolution(seconds, {}, f"no resolution within {LIMIT_S} s", offered)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        return Resolution(seconds, {}, done.stderr[-3000:], offered)
    items = json.loads(report.read_text(encoding="utf-8"))["install"]
    installed = {_canonical(i["metadata"]["name"]): i["metadata"]["version"] for i in items}
    return Resolution(seconds, installed, "", offered)


def problems(result: Resolution) -> list[str]:
    """Why the resolution is not the one a user should get: empty when it is."""
    if result.error:
        return [result.error]
    found = [
        f"{dist} {result.installed.get(dist)} resolved where the index offers {version}: "
        "pip backtracked"
        for dist, version in result.offered.items()
        if result.installed.get(dist) != version
    ]
    if result.seconds >= LIMIT_S:
        found.append(f"the resolution took {result.seconds:.0f} s (limit {LIMIT_S} s)")
    return found


@pytest.fixture(scope="module")
def resolutions(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Mapping[str, Resolution]:
    """Every selected framework's resolution, run once for the module."""
    selected = {
        item.callspec.params["name"]
        for item in request.session.items
        if item.path == Path(__file__)
        and hasattr(item, "callspec")
        and "name" in item.callspec.params
    } or set(FRAMEWORKS)
    folder = tmp_path_factory.mktemp("pip-reports")

    def one(name: str) -> Resolution:
        framework = FRAMEWORKS[name]
        requirements = (f"{ROOT}[instruments]", *framework.requirements, *framework.beside)
        return resolve(requirements, framework.newest, folder / f"{name}.json")

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {name: pool.submit(one, name) for name in sorted(selected)}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", sorted(FRAMEWORKS))
def test_one_pip_install_resolves_to_the_newest_release(
    name: str, resolutions: Mapping[str, Resolution]
) -> None:
    result = resolutions[name]
    found = {dist: result.installed.get(dist) for dist in result.offered}
    mcp, api = (result.installed.get(dist) for dist in ("mcp", "opentelemetry-api"))
    print(
        f"{name}: {found}, newest {dict(result.offered)} (mcp {mcp}, opentelemetry-api {api}) "
        f"in {result.seconds:.1f} s"
    )
    assert problems(result) == []
    assert "otel-mcp-health" in result.installed
    assert "mcp" in result.installed


def test_the_table_never_pins_a_framework() -> None:
    """The framework is given bare (extras only): the assertion is that pip *chooses* its newest."""
    for framework in FRAMEWORKS.values():
        for requirement in framework.requirements:
            assert re.fullmatch(r"[A-Za-z0-9._-]+(\[[A-Za-z0-9._,-]+\])?", requirement)
        for requirement in framework.beside:
            assert _canonical(re.split(r"[\s\[<>=!~]", requirement)[0]) not in framework.newest


# The check on a local index: a fake product (``fake-product``), a fake framework and a library
# they share, as wheels in one --find-links folder, pip told to read nothing else.


def _wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """A wheel holding only its metadata: all pip reads to resolve."""
    stem = f"{name.replace('-', '_')}-{version}"
    metadata = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}"]
    metadata += [f"Requires-Dist: {requirement}" for requirement in requires]
    info = f"{stem}.dist-info"
    files = {
        f"{info}/METADATA": "\n".join(metadata) + "\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/RECORD": "",
    }
    with zipfile.ZipFile(folder / f"{stem}-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


def _local_resolution(folder: Path, report: Path) -> Resolution:
    index = ("--no-index", "--find-links", str(folder))
    return resolve(("fake-product", "fake-framework"), ("fake-framework",), report, index)


def test_a_newer_release_on_the_index_passes(tmp_path: Path) -> None:
    _wheel(tmp_path, "fake-product", "1.0", ("fake-lib >= 1",))
    _wheel(tmp_path, "fake-lib", "1.0")
    _wheel(tmp_path, "fake-framework", "1.0", ("fake-lib",))
    first = _local_resolution(tmp_path, tmp_path / "first.json")
    assert (first.offered, problems(first)) == ({"fake-framework": "1.0"}, [])
    _wheel(tmp_path, "fake-framework", "1.1", ("fake-lib",))  # the framework releases
    after = _local_resolution(tmp_path, tmp_path / "after.json")
    assert (after.offered, problems(after)) == ({"fake-framework": "1.1"}, [])
    assert after.installed["fake-framework"] == "1.1"


def test_a_backtracking_resolution_fails(tmp_path: Path) -> None:
    """The framework's newest release needs a library our range excludes: pip backtracks to the
    release before, and the check names it."""
    _wheel(tmp_path, "fake-product", "1.0", ("fake-lib < 2",))
    _wheel(tmp_path, "fake-lib", "1.0")
    _wheel(tmp_path, "fake-lib", "2.0")
    _wheel(tmp_path, "fake-framework", "1.0", ("fake-lib",))
    _wheel(tmp_path, "fake-framework", "1.1", ("fake-lib >= 2",))
    result = _local_resolution(tmp_path, tmp_path / "report.json")
    assert result.installed["fake-framework"] == "1.0"
    assert problems(result) == [
        "fake-framework 1.0 resolved where the index offers 1.1: pip backtracked"
    ]


def test_a_slow_resolution_fails() -> None:
    slow = Resolution(LIMIT_S + 1.0, {"fake-framework": "1.1"}, "", {"fake-framework": "1.1"})
    assert problems(slow) == [f"the resolution took {LIMIT_S + 1} s (limit {LIMIT_S} s)"]
