"""The approval alert while unapproved calls continue (promtool, real rules)."""

from __future__ import annotations

import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent / "promtool"


def test_unapproved_calls_keep_the_reviewer_alert_firing() -> None:
    done = subprocess.run(
        ["promtool", "test", "rules", "long-running-agent.test.yml"],
        cwd=HERE,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
