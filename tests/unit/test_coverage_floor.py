"""The coverage floor is the measured figure rounded down to one decimal,
written by scripts/coverage_floor.py."""

from __future__ import annotations

import importlib.util
import tomllib
from decimal import Decimal
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "coverage_floor.py"
_SPEC = importlib.util.spec_from_file_location("coverage_floor", _PATH)
assert _SPEC is not None
assert _SPEC.loader is not None
floor_script = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(floor_script)


@pytest.mark.parametrize(
    ("total", "floor"), [(94.56, "94.5"), (94.3, "94.3"), (94.29999, "94.2"), (100.0, "100.0")]
)
def test_the_floor_is_the_total_rounded_down(total: float, floor: str) -> None:
    assert floor_script.floor(total) == Decimal(floor)


def test_it_rewrites_the_one_fail_under_and_the_report_compares_at_that_precision() -> None:
    text = floor_script.PYPROJECT.read_text(encoding="utf-8")
    report = tomllib.loads(floor_script.with_floor(text, Decimal("94.5")))["tool"]["coverage"]
    assert (report["report"]["fail_under"], report["report"]["precision"]) == (94.5, 1)
