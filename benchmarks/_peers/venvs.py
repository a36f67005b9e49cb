"""The peer benchmark's cached venvs: made once, re-used while their pins match a stamp file.

Everything here writes under the cache folder (``~/.cache/otel-mcp-health-bench`` unless
``BENCH_PEERS_CACHE`` says otherwise), never into the working tree; results go through
``_common.Report`` like every benchmark's.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Sequence

CACHE = pathlib.Path(
    os.environ.get("BENCH_PEERS_CACHE", pathlib.Path.home() / ".cache/otel-mcp-health-bench")
)
STAMP = "bench-stamp.txt"


def python(name: str) -> pathlib.Path:
    return CACHE / name / "bin" / "python"


def ensure(name: str, requirements: Sequence[str], constraints: Sequence[str], stamp: str) -> str:
    """Make (``python -m venv``, ``pip install -c constraints requirements``) or re-use the venv
    ``name``; returns ``""`` when it is ready, else why not (pip's last words)."""
    where = CACHE / name
    stamp_file = where / STAMP
    if stamp_file.exists() and stamp_file.read_text(encoding="utf-8") == stamp:
        return ""
    shutil.rmtree(where, ignore_errors=True)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    pip = [str(python(name)), "-m", "pip", "install", "-q", "-c", str(where / "constraints.txt")]
    proc = subprocess.run(
        [sys.executable, "-m", "venv", str(where)], capture_output=True, text=True, check=False
    )
    if not proc.returncode:
        (where / "constraints.txt").write_text("\n".join(constraints) + "\n", encoding="utf-8")
        proc = subprocess.run(
            [*pip, *requirements], capture_output=True, text=True, env=env, check=False
        )
    if proc.returncode:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        return "cannot install: " + " / ".join(lines[-2:])[:300]
    stamp_file.write_text(stamp, encoding="utf-8")
    return ""
