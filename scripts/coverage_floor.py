"""Sets the coverage floor to the measured figure (``make coverage-floor``, after a whole
``make coverage`` run).

The floor (``fail_under`` in ``pyproject.toml``) is the total of the last whole run, rounded down
to one decimal, the precision the report shows: a run that covers less than the last one (a test
module deleted, a scenario that stopped reaching its code) fails ``make coverage``, and the same
run again passes.
"""

from __future__ import annotations

import io
import re
import sys
from decimal import ROUND_DOWN, Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
FAIL_UNDER = re.compile(r"^(fail_under = )([0-9.]+)$", re.MULTILINE)


def floor(total: float) -> Decimal:
    """``total`` rounded down to one decimal (in decimal: 94.3 stays 94.3)."""
    return Decimal(repr(total)).quantize(Decimal("0.1"), rounding=ROUND_DOWN)


def with_floor(text: str, figure: Decimal) -> str:
    """``pyproject.toml``'s text with ``fail_under`` set to ``figure``."""
    new, count = FAIL_UNDER.subn(rf"\g<1>{figure}", text)
    if count != 1:
        raise ValueError(f"expected one fail_under line in {PYPROJECT.name}, found {count}")
    return new


def main() -> int:
    import coverage

    measured = coverage.Coverage(config_file=str(PYPROJECT))
    measured.load()
    total = measured.report(file=io.StringIO(), precision=2)
    figure = floor(total)
    text = PYPROJECT.read_text(encoding="utf-8")
    found = FAIL_UNDER.search(text)
    PYPROJECT.write_text(with_floor(text, figure), encoding="utf-8")
    old = found[2] if found else "?"
    sys.stdout.write(f"coverage floor: {old} -> {figure} (measured {total:.2f} %)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
