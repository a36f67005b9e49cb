"""A packaged outcome verifier: the report the tool promised exists and is not empty."""

from __future__ import annotations

from pathlib import Path
from typing import Any

NOT_A_FUNCTION = 42


def report_written(call: Any) -> bool:
    """``call`` is an ``otel_mcp_health.CallContext``; this package does not import it."""
    path = Path(str(call.arguments["path"]))
    return path.is_file() and path.stat().st_size > 0
