"""The probe's answer to one scrape, exactly as recorded (``tests/vectors/differential``).

One probe of a healthy stdio server with a canary call: every family, its help text, type,
labels, their order and the values, byte for byte; only the clock readings (``*_seconds``) are
masked. ``MCP_HEALTH_DIFFERENTIAL_UPDATE=1`` records the golden when a change is intended.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

from tests.probe.conftest import get, running, stdio_command

GOLDEN = Path(__file__).resolve().parents[1] / "vectors" / "differential" / "probe-output.txt"
CONFIG = (
    '[module.default]\ntimeout = 15\n[[target]]\nname = "t"\ntransport = "stdio"\n'
    'command = {command}\n[target.canary]\ntool = "lookup"\narguments = {{ q = "x" }}\n'
)
#: A sample of a clock family: its value varies per run.
TIMED = re.compile(r"^(\w+_seconds(?:\{[^}]*\})?) \S+$", re.MULTILINE)


def test_one_probe_answer_is_the_recorded_one(config_file: Callable[[str], Path]) -> None:
    path = config_file(CONFIG.format(command=json.dumps(stdio_command())))
    with running(path) as (_service, base):
        status, body = get(f"{base}/probe?target=t")
    actual = f"status {status}\n" + TIMED.sub(r"\1 <seconds>", body)
    if os.environ.get("MCP_HEALTH_DIFFERENTIAL_UPDATE") == "1":
        GOLDEN.write_text(actual, encoding="utf-8")
    assert actual == GOLDEN.read_text(encoding="utf-8")
