"""Shared fixtures: paths to the seed fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "tests" / "fixtures" / "seeds"


@pytest.fixture
def seeds_dir() -> Path:
    """The directory holding the three seed fixture files."""
    return SEEDS
