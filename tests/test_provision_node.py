"""``make test`` on a machine without Node.js: its provisioning installs node and npm first.

``scripts/check-prerequisites.sh`` lets ``make test`` start when node or npm is missing and
apt-get can install it (root or sudo), and the README says apt-get does. ``make test`` provisions
the pipeline (``scripts/provision-pipeline.sh``) before the ``check`` servers, and the pipeline's
dashboard stage runs ``npm ci``: so that script must be the one that installs them. The script
runs here for real from a copy of its directory layout, on a ``PATH`` of stand-ins: an
``apt-get`` that records what it was asked and "installs" node and npm, a ``go`` and builder that
are already current, a ``timeout`` that stands for the cached collector build, and ``id`` saying
who runs it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What the script runs besides the stand-ins below.
REAL = ("bash", "env", "dirname", "date", "sha256sum", "cut", "cat", "mkdir", "chmod")


def _stub(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)


def _machine(tmp_path: Path, uid: int) -> tuple[Path, Path]:
    """A checkout copy with only what the script reads, and a PATH directory without node."""
    checkout, bin_dir = tmp_path / "checkout", tmp_path / "bin"
    (checkout / "scripts").mkdir(parents=True)
    (checkout / "dashboards").mkdir()
    shutil.copy(ROOT / "scripts" / "provision-pipeline.sh", checkout / "scripts")
    shutil.copy(ROOT / "dashboards" / "package-lock.json", checkout / "dashboards")
    bin_dir.mkdir()
    for tool in REAL:
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    for present in ("prometheus", "promtool", "prometheus-alertmanager", "amtool", "valgrind"):
        _stub(bin_dir / present, "exit 0")
    _stub(bin_dir / "id", f"echo {uid}")
    _stub(bin_dir / "sudo", 'echo sudo >> "$(dirname "$0")/apt.log"; exec "$@"')
    _stub(bin_dir / "timeout", "exit 0")  # the collector build, cached
    gopath = tmp_path / "gopath"
    (gopath / "bin").mkdir(parents=True)
    _stub(gopath / "bin" / "builder", "echo ocb version v0.161.0")
    _stub(bin_dir / "go", f"echo {gopath}")
    # apt-get records its arguments; installing nodejs/npm puts stand-ins for them on PATH.
    npm = "mkdir -p node_modules"
    _stub(
        bin_dir / "apt-get",
        'here=$(dirname "$0"); echo "$*" >> "$here/apt.log"\n'
        'case " $* " in *" nodejs "*) printf "#!/bin/sh\\n" > "$here/node";; esac\n'
        f'case " $* " in *" npm "*) printf "#!/bin/sh\\n{npm}\\n" > "$here/npm";; esac\n'
        'chmod 755 "$here"/node "$here"/npm 2>/dev/null; exit 0',
    )
    return checkout, bin_dir


def _provision(checkout: Path, bin_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "bash"), str(checkout / "scripts" / "provision-pipeline.sh")],
        env={"PATH": str(bin_dir), "HOME": str(checkout)},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(("uid", "via_sudo"), [(0, False), (1000, True)], ids=["root", "sudo"])
def test_provisioning_installs_node_and_npm_before_the_dashboard_stage(
    tmp_path: Path, uid: int, *, via_sudo: bool
) -> None:
    checkout, bin_dir = _machine(tmp_path, uid)
    result = _provision(checkout, bin_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    log = (bin_dir / "apt.log").read_text(encoding="utf-8").splitlines()
    installs = [line for line in log if " install " in f" {line} "]
    assert len(installs) == 1, log
    assert installs[0].split()[-2:] == ["nodejs", "npm"], installs
    assert "prometheus" not in installs[0]  # already there: only what is missing
    assert ("sudo" in log) is via_sudo
    assert (checkout / "dashboards" / "node_modules" / ".provisioned").is_file()
