"""``make test`` checks its prerequisites first and names a missing one in one line.

``scripts/check-prerequisites.sh`` runs before anything else of ``make test``. These tests run it
for real with a ``PATH`` that lacks one tool each time (a directory of links to the real tools),
and once as a user who is not root and has no sudo.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check-prerequisites.sh"
MAKEFILE = ROOT / "Makefile"
#: What the script itself runs, and the tools it looks for.
TOOLS = (
    *("bash", "env", "dirname", "id", "df", "awk", "go"),
    *("prometheus", "promtool", "prometheus-alertmanager", "amtool", "node", "npm"),
)


def _path_without(tmp_path: Path, *absent: str) -> Path:
    """A directory of links to the real tools, minus ``absent``; ``python3`` is this one."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    go_home = Path("/usr/local/go/bin")  # where Go's tarball installs it (off PATH here)
    for tool in TOOLS:
        found = shutil.which(tool) or shutil.which(tool, path=str(go_home))
        if tool not in absent and found:
            (bin_dir / tool).symlink_to(found)
    return bin_dir


def _check(bin_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(bin_dir), "HOME": os.environ["HOME"], "GO_FALLBACK": "/nonexistent"}
    return subprocess.run(
        [str(SCRIPT)], env=env, capture_output=True, text=True, check=False, timeout=60
    )


def test_everything_present_passes(tmp_path: Path) -> None:
    # make test provisions promtool, amtool, node and npm before its pytest run
    result = _check(_path_without(tmp_path))
    assert (result.returncode, result.stderr) == (0, "")


def test_a_path_without_go_fails_early_in_one_line(tmp_path: Path) -> None:
    result = _check(_path_without(tmp_path, "go"))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("make test: Go is missing: install it (https://go.dev/dl/)")


def test_a_tool_apt_get_must_install_needs_root(tmp_path: Path) -> None:
    bin_dir = _path_without(tmp_path, "promtool", "id")
    (bin_dir / "id").write_text("#!/bin/sh\necho 1000\n", encoding="utf-8")  # not root, no sudo
    (bin_dir / "id").chmod(0o755)
    (bin_dir / "apt-get").symlink_to(shutil.which("true") or "/bin/true")
    result = _check(bin_dir)
    assert result.returncode == 1
    assert result.stderr == (
        "make test: promtool is missing and installing it with apt-get needs root: "
        "run make test as root (or with sudo)\n"
    )


def test_a_server_binary_missing_beside_its_tool_needs_root_too(tmp_path: Path) -> None:
    # provision-pipeline.sh installs the Debian package when the server or its tool is missing
    bin_dir = _path_without(tmp_path, "prometheus", "id")
    (bin_dir / "id").write_text("#!/bin/sh\necho 1000\n", encoding="utf-8")  # not root, no sudo
    (bin_dir / "id").chmod(0o755)
    (bin_dir / "apt-get").symlink_to(shutil.which("true") or "/bin/true")
    result = _check(bin_dir)
    assert result.returncode == 1
    assert result.stderr.startswith("make test: prometheus is missing and installing it")


def test_make_test_runs_the_check_before_anything_else() -> None:
    text = MAKEFILE.read_text(encoding="utf-8")
    recipe = text[text.index("\ntest:") :].splitlines()
    assert recipe[1].startswith("test: prerequisites "), recipe[1]
    assert "prerequisites:\n\t@PYTHON=$(PYTHON) scripts/check-prerequisites.sh" in text


@pytest.mark.parametrize("home", ["/nonexistent", None], ids=["missing", "unset"])
def test_a_home_that_is_not_a_directory_is_named_in_one_line(
    tmp_path: Path, home: str | None
) -> None:
    # nobody's HOME is /nonexistent; cron and some CI runners start with none at all
    env = {"PATH": str(_path_without(tmp_path)), "GO_FALLBACK": "/nonexistent"}
    if home is not None:
        env["HOME"] = home
    result = subprocess.run(
        [str(SCRIPT)], env=env, capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 1
    assert result.stderr == (
        f"make test: HOME ({home or 'unset'}) is not a directory: "
        "the venvs, pip, npm and Go keep their caches there\n"
    )
