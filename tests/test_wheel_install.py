"""Install as users install: build the wheel and sdist, install the wheel into a fresh venv.

``python -m build`` makes both distributions from the checkout and ``twine check --strict``
accepts them (metadata, the README as the long description, the licence). The wheel then goes
into a new virtual environment the way the README says: first bare (the CLI works, ``--version``
answers, ``demo`` says the MCP SDK is missing), then with ``[instruments]``, where the plain
``ClientSession`` example runs zero-code from the installed package alone (entry points, the
``mcp_health`` configurator, the outcome policy) and its spans carry the expected verdicts.
pip resolves the dependencies from the index it is configured with, through its cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from otel_mcp_health import __version__

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _run(
    argv: list[str], *, cwd: Path, timeout: float = 600, isolated: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run ``argv``; ``isolated``: with no trace of the checkout or this venv on the import path."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV"} if isolated else set()
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=timeout
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel and sdist ``python -m build`` makes (hatchling from this environment)."""
    pytest.importorskip("build", reason="the dev extra installs build")
    out = tmp_path_factory.mktemp("dist")
    argv = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)]
    built = _run(argv, cwd=out, isolated=False)
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("*.whl")
    return wheel


def test_twine_accepts_the_wheel_and_the_sdist(dist: Path) -> None:
    pytest.importorskip("twine", reason="the dev extra installs twine")
    files = sorted(str(p) for p in dist.iterdir())
    assert sorted(Path(f).suffix for f in files) == [".gz", ".whl"]
    twine = [sys.executable, "-m", "twine", "check", "--strict", *files]
    checked = _run(twine, cwd=dist, isolated=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2


def test_the_wheel_carries_what_users_and_type_checkers_need(dist: Path) -> None:
    with zipfile.ZipFile(_wheel(dist)) as archive:
        names = set(archive.namelist())
        info = f"otel_mcp_health-{__version__}.dist-info"
        meta = archive.read(f"{info}/METADATA").decode()
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    assert "otel_mcp_health/py.typed" in names
    assert f"{info}/licenses/LICENSE" in names
    assert "Description-Content-Type: text/markdown" in meta
    assert "Provides-Extra: instruments" in meta
    for line in (
        "otel-mcp-health = otel_mcp_health.cli:main",
        "mcp_health = otel_mcp_health.configurator:McpHealthConfigurator",
        "mcp_health = otel_mcp_health.instrumentation:McpHealthInstrumentor",
    ):
        assert line in entry_points
    assert not any(name.startswith(("tests/", "examples/")) for name in names)


def test_the_wheel_installs_and_runs_a_zero_code_agent(dist: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path).returncode == 0
    python, bin_dir = venv / "bin" / "python", venv / "bin"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    wheel = _wheel(dist)

    bare = _run([*pip, str(wheel)], cwd=tmp_path)
    assert bare.returncode == 0, bare.stderr
    version = _run([str(bin_dir / "otel-mcp-health"), "--version"], cwd=tmp_path)
    assert version.stdout == f"otel-mcp-health {__version__}\n", version.stderr
    where = _run(
        [str(python), "-c", "import otel_mcp_health; print(otel_mcp_health.__file__)"], cwd=tmp_path
    )
    assert where.stdout.startswith(str(venv)), where.stdout  # the wheel, not the checkout
    demo = _run([str(bin_dir / "otel-mcp-health"), "demo"], cwd=tmp_path)
    assert demo.returncode == 2
    assert "pip install 'otel-mcp-health[instruments]'" in demo.stderr

    full = _run([*pip, f"{wheel}[instruments]"], cwd=tmp_path)
    assert full.returncode == 0, full.stderr
    example = _run(
        [str(python), str(EXAMPLES / "run.py"), "plain_session", "--python", str(python)],
        cwd=tmp_path,
        timeout=180,
    )
    assert example.returncode == 0, example.stdout + example.stderr
    assert "tools/call export_report_broken  false_success  verifier_failed" in example.stdout
    assert "tools/call export_report         healthy" in example.stdout
