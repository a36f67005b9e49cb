"""What ``pin`` prints, exactly as recorded (``tests/vectors/differential``): a first pin, an
update that drifts (the classified diff, not written without ``--accept``) and a verify, each
with its exit code, stdout and stderr. ``MCP_HEALTH_DIFFERENTIAL_UPDATE=1`` records the golden
when a change is intended."""

from __future__ import annotations

import os
from pathlib import Path

from tests.pin.pin_support import pin, tools_file

GOLDEN = Path(__file__).resolve().parents[1] / "vectors" / "differential" / "pin-output.txt"


def test_pin_update_and_verify_print_the_recorded_output(tmp_path: Path) -> None:
    path = tmp_path / "pins.toml"
    pins = ["--pins", path, "--name", "s"]
    runs = [
        ("pin", [*pins, "--tools-file", tools_file(tmp_path, "base")]),
        ("update", [*pins, "--update", "--tools-file", tools_file(tmp_path, "description")]),
        ("verify", [*pins, "--verify", "--tools-file", tools_file(tmp_path, "added")]),
    ]
    shown = []
    for label, argv in runs:
        done = pin(*argv)
        shown.append(f"== {label}: exit {done.code}\n-- out\n{done.out}-- err\n{done.err}")
    shown.append("== pin file\n" + path.read_text(encoding="utf-8"))
    actual = "".join(shown).replace(str(tmp_path), "<tmp>")
    if os.environ.get("MCP_HEALTH_DIFFERENTIAL_UPDATE") == "1":
        GOLDEN.write_text(actual, encoding="utf-8")
    assert actual == GOLDEN.read_text(encoding="utf-8")
