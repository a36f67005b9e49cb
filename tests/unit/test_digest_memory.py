"""The digester's cache is bounded in bytes, not only in tools (docs/model.md#catalog).

A tool definition may be megabytes (a large ``inputSchema``), and the cache keeps two copies of
each (its type proof and its canonical bytes). Bounded by count alone, 4096 such tools held
gigabytes; the byte budget caps what it holds whatever the tools weigh.
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

from otel_mcp_health.core import digest
from otel_mcp_health.core.digest import CatalogDigester

MIB = 1024 * 1024


def _large_tool(index: int, size: int) -> dict[str, Any]:
    """A tool whose description alone weighs ``size`` bytes."""
    return {"name": f"t{index}", "description": f"{index:08d}" + "x" * size}


def test_a_byte_budget_caps_the_cache_whatever_the_tools_weigh() -> None:
    digester = CatalogDigester(max_bytes=4 * MIB)
    for index in range(12):
        digester.digest([_large_tool(index, MIB)])
    assert digester.held_bytes <= 2 * 4 * MIB
    assert 0 < len(digester) < 12
    assert digester.held_bytes >= MIB  # the most recent tools stay cached
    warm = digester.hits
    digester.digest([_large_tool(11, MIB)])
    assert digester.hits == warm + 1


def test_a_tool_larger_than_the_budget_is_never_cached() -> None:
    digester = CatalogDigester(max_bytes=MIB)
    tools = [_large_tool(0, 2 * MIB)]
    first = digester.digest(tools)
    assert digester.held_bytes == 0
    assert len(digester) == 0
    assert digester.digest(tools) == first


def test_the_default_digester_retains_at_most_its_budget() -> None:
    """Measured, not trusted: memory retained after digesting 3x the default budget of large
    tools stays within twice the budget (cache + remembered catalogs), plus slack."""
    digester = CatalogDigester()
    size = 2 * MIB
    count = 3 * digest.DEFAULT_MAX_BYTES // size
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for index in range(count):
            digester.digest([_large_tool(index, size)])  # each tool is garbage after its digest
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert retained <= 2 * digest.DEFAULT_MAX_BYTES + MIB
    assert digester.held_bytes <= 2 * digest.DEFAULT_MAX_BYTES
