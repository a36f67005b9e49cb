"""Benchmark: the canonical catalog digest against the ``rfc8785`` reference.

Run ``python benchmarks/bench_digest.py`` (``make bench`` runs it). For each catalog (typical and
heavy, 1,000 tools each, ``_catalogs.py``) and each fast path (``orjson``, the optional [fast]
extra; the standard library's C encoder, measured in a child process where ``orjson`` cannot be
imported, exactly as on an install without the extra) it alternates, round after round, in one
process:

* baseline: the recipe with the reference package (project, sort, ``rfc8785.dumps``, SHA-256);
* cold: a fresh ``CatalogDigester`` (every tool canonicalized, its cache key computed and stored);
* uncached: ``CatalogDigester(max_tools=0)``;
* warm: the same catalog objects again; warm, re-parsed: an equal catalog in new objects (the
  next ``tools/list`` response); one changed: a catalog with one tool edited;
* floors: the cache keys alone (``jcs.type_proofs``, the bulk of a warm digest) and the encoder
  alone on the projected tools (what a cold digest cannot go below).

Process CPU time per operation; medians with ranges; speedups are per-round ratios against the
baseline of the same round. It also counts the tools that leave the fast path for the exact one.
Results: ``benchmarks/.results/digest.md``.
"""

from __future__ import annotations

import gc
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import rfc8785

from _catalogs import make_catalog, make_typical_catalog
from _common import Report, median, spread
from otel_mcp_health.core import jcs
from otel_mcp_health.core.digest import CatalogDigester, project_tool

ROUNDS = 11
CATALOGS: dict[str, tuple[str, Callable[[], list[dict[str, Any]]]]] = {
    "typical": ("schema-dense, integer bounds, ASCII descriptions", make_typical_catalog),
    "heavy": ("long descriptions, floats such as 0.0 and 1e-7, emoji", make_catalog),
}
TARGETS = {"typical": 5.0, "heavy": 2.5}  # cold speedup vs rfc8785 (issue targets)
WARM_TARGET_MS = 3.0


def _cpu_ms(func: Callable[[], object]) -> float:
    gc.collect()
    start = time.process_time_ns()
    func()
    return (time.process_time_ns() - start) / 1e6


def _variants(catalog: list[dict[str, Any]], text: str) -> dict[str, Callable[[], object]]:
    projected = [project_tool(tool) for tool in catalog]
    if jcs._ORJSON is not None:
        dumps, options = jcs._ORJSON

        def encode(tool: Any) -> object:
            return dumps(tool, None, options)
    else:
        encode = jcs._stdlib_encode
    warm = CatalogDigester()
    warm.digest(catalog)
    reparsed = [json.loads(text) for _ in range(ROUNDS)]
    edited = json.loads(text)
    edited[0]["description"] += " (edited)"

    def baseline() -> str:
        tools = sorted((project_tool(t) for t in catalog), key=lambda t: t["name"])
        return "sha256:" + hashlib.sha256(rfc8785.dumps(tools)).hexdigest()

    primed = [CatalogDigester() for _ in range(ROUNDS)]
    for digester in primed:
        digester.digest(catalog)

    return {
        "baseline": baseline,
        "cold": lambda: CatalogDigester().digest(catalog),
        "uncached": lambda: CatalogDigester(max_tools=0).digest(catalog),
        "warm": lambda: warm.digest(catalog),
        "warm, re-parsed": lambda: warm.digest(reparsed.pop()),
        "one changed": lambda: primed.pop().digest(edited),
        "floor: cache keys": lambda: jcs.type_proofs(catalog),
        "floor: encoder": lambda: [encode(tool) for tool in projected],
    }


def _exact_share(catalog: list[dict[str, Any]]) -> int:
    """How many tools the fast path hands to the exact path."""
    deferred = 0
    for tool in catalog:
        try:
            jcs._FAST[jcs.ENCODER](project_tool(tool), jcs.type_proof(tool) or b"")
        except jcs._Defer:
            deferred += 1
    return deferred


def measure(name: str) -> dict[str, Any]:
    """One catalog with this process's encoder: per-variant CPU ms per round, and facts."""
    catalog = json.loads(json.dumps(CATALOGS[name][1]()))  # as a client holds it: parsed JSON
    text = json.dumps(catalog)
    variants = _variants(catalog, text)
    reference = variants["baseline"]()
    assert CatalogDigester().digest(catalog) == reference, "digest differs from rfc8785"
    times: dict[str, list[float]] = {key: [] for key in variants}
    for _ in range(ROUNDS):
        for key, func in variants.items():
            times[key].append(_cpu_ms(func))
    canonical = len(rfc8785.dumps(sorted((project_tool(t) for t in catalog), key=str)))
    return {
        "times": times,
        "tools": len(catalog),
        "mb": canonical / 1e6,
        "deferred": _exact_share(catalog),
        "encoder": jcs.ENCODER,
    }


def _child(encoder: str) -> dict[str, Any]:
    """Run :func:`measure` in a child process (``stdlib``: with ``orjson`` made unimportable)."""
    block = "import sys; sys.modules['orjson'] = None; " if encoder == "stdlib" else ""
    code = (
        f"{block}import json, sys; sys.path[:0] = {[str(p) for p in sys.path[:1]]!r}; "
        "import bench_digest as b; "
        "print(json.dumps({n: b.measure(n) for n in b.CATALOGS}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _speedups(times: dict[str, list[float]], key: str) -> list[float]:
    return [base / value for base, value in zip(times["baseline"], times[key], strict=True)]


def _rows(name: str, data: dict[str, Any]) -> list[list[str]]:
    times = data["times"]
    rows = []
    for key in times:
        speed = "1.00x" if key == "baseline" else _speedup_text(_speedups(times, key))
        rows.append([key, spread(times[key], 2), speed])
    return rows


def _speedup_text(values: list[float]) -> str:
    return f"{median(values):.1f}x ({min(values):.1f}-{max(values):.1f})"


def _verdict(met: bool) -> str:
    return "meets" if met else "misses"


def main() -> int:
    report = Report("Catalog digest benchmark", "digest")
    report.add(
        f"- {ROUNDS} alternating rounds per variant, process CPU time per operation; speedup = "
        "per-round ratio rfc8785 baseline / variant (median, range)",
        "- baseline: project, sort, `rfc8785.dumps`, SHA-256 (the recipe with the reference "
        "package); every variant's digest equals it",
    )
    summary = []
    for encoder in ("orjson", "stdlib"):
        results = _child(encoder)
        for name, data in results.items():
            label, _ = CATALOGS[name]
            report.add(
                "",
                f"## {name} catalog, {data['encoder']} fast path",
                "",
                f"- {label}: {data['tools']} tools, {data['mb']:.2f} MB canonical JSON; "
                f"{data['deferred']} tools take the exact (rfc8785) path",
            )
            header = ["variant", "CPU ms, median (range)", "speedup vs rfc8785"]
            report.table(header, _rows(name, data))
            times = data["times"]
            cold = median(_speedups(times, "cold"))
            warm = median(times["warm"])
            summary.append(
                [
                    name,
                    data["encoder"],
                    f"{cold:.1f}x ({_verdict(cold >= TARGETS[name])} >= {TARGETS[name]}x)",
                    f"{warm:.2f} ms ({_verdict(warm <= WARM_TARGET_MS)} <= {WARM_TARGET_MS} ms)",
                    f"{median(_speedups(times, 'floor: encoder')):.1f}x",
                ]
            )
    report.add("", "## Summary")
    report.table(
        ["catalog", "fast path", "cold speedup vs rfc8785", "warm", "floor: encoder alone"],
        summary,
    )
    report.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
