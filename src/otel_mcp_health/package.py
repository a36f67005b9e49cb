"""The supported range of the instrumented library: the one place it is written.

The ``instruments`` extra in ``pyproject.toml`` mirrors this tuple; ``tests/test_packaging.py``
pins the two together so that ``opentelemetry-instrument`` skips us cleanly when ``mcp`` is
missing or out of range.
"""

from __future__ import annotations

_instruments: tuple[str, ...] = ("mcp >= 1.19, < 3",)
