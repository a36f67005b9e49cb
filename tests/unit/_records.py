"""Helpers to load and mutate evidence records in tests (JSON in, core records out)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from otel_mcp_health.core.evidence import Record
from otel_mcp_health.core.records import EvidenceError, parse_record

SEEDS = Path(__file__).resolve().parents[1] / "fixtures" / "seeds"


def load_raw(name: str) -> list[dict[str, Any]]:
    """The raw JSON objects of one seed fixture file."""
    lines = (SEEDS / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def raw_by_id(name: str, record_id: str) -> dict[str, Any]:
    """A deep copy of one raw seed record, ready to mutate."""
    for raw in load_raw(name):
        if raw["id"] == record_id:
            return copy.deepcopy(raw)
    raise KeyError(record_id)


def record(raw: dict[str, Any]) -> Record:
    """Parse a raw JSON object; fail the test loudly if it does not parse."""
    parsed = parse_record(raw)
    assert not isinstance(parsed, EvidenceError), str(parsed)
    return parsed
