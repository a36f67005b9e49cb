"""Benchmark: canonical catalog digest vs the ``rfc8785`` reference (SPEC §3).

Run ``python benchmarks/bench_digest.py``. It measures, in one process and on one generated
1,000-tool catalog: ``rfc8785.dumps`` on the projected, sorted array (the baseline), our cold
digest (fresh cache every repetition), and our warm digest (the same, unchanged catalog digested
again through the per-tool cache). It prints medians and ratios and writes them to
``benchmarks/results/digest.md``. Benchmarks report; they do not gate.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import marshal
import os
import pathlib
import platform
import random
import statistics
import sys
import time
from typing import Any

_WORDS = (
    "ticket",
    "project",
    "user",
    "account",
    "invoice",
    "order",
    "id",
    "name",
    "status",
    "priority",
    "label",
    "comment",
    "created",
    "updated",
    "due",
    "owner",
    "assignee",
    "query",
    "limit",
    "cursor",
    "page",
    "filter",
    "sort",
    "field",
    "value",
    "repository",
    "branch",
    "commit",
    "path",
    "file",
    "content",
    "encoding",
    "message",
    "reason",
    "scope",
    "region",
)
_NON_ASCII = ("Größe", "café", "naïve", "日本語", "Ελληνικά", "emoji 🚀", "€ amount", "ñandú")


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(n)]
    if rng.random() < 0.1:
        words.append(rng.choice(_NON_ASCII))
    return " ".join(words).capitalize() + "."


def _property(rng: random.Random, depth: int) -> dict[str, Any]:
    kind = rng.choice(("string", "string", "integer", "number", "boolean", "array", "object"))
    prop: dict[str, Any] = {"type": kind, "description": _sentence(rng, rng.randint(4, 14))}
    if kind == "string":
        if rng.random() < 0.3:
            prop["enum"] = [rng.choice(_WORDS) + str(i) for i in range(rng.randint(2, 6))]
        if rng.random() < 0.2:
            prop["format"] = rng.choice(("date-time", "uri", "email"))
        if rng.random() < 0.2:
            prop["maxLength"] = rng.randint(8, 4096)
    elif kind == "integer":
        prop["minimum"] = 0
        prop["maximum"] = rng.choice((100, 1000, 2**31 - 1))
        if rng.random() < 0.3:
            prop["default"] = rng.randint(0, 100)
    elif kind == "number":
        prop["minimum"] = rng.choice((0.0, -1.5, 1e-7))
        prop["maximum"] = rng.choice((1.0, 100.25, 1e21, 3.14159))
        if rng.random() < 0.3:
            prop["multipleOf"] = 0.01
    elif kind == "array":
        prop["items"] = _property(rng, depth + 1) if depth < 2 else {"type": "string"}
        prop["maxItems"] = rng.randint(1, 100)
    elif kind == "object" and depth < 2:
        sub = {
            f"{rng.choice(_WORDS)}_{i}": _property(rng, depth + 1) for i in range(rng.randint(1, 4))
        }
        prop["properties"] = sub
        prop["required"] = sorted(rng.sample(sorted(sub), k=rng.randint(0, len(sub))))
        prop["additionalProperties"] = False
    return prop


def make_tool(rng: random.Random, index: int) -> dict[str, Any]:
    """One moderately sized MCP tool definition (as parsed JSON)."""
    props = {
        f"{rng.choice(_WORDS)}{rng.choice(_WORDS).capitalize()}{i}": _property(rng, 0)
        for i in range(rng.randint(2, 8))
    }
    tool: dict[str, Any] = {
        "name": f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{index}",
        "description": _sentence(rng, rng.randint(10, 40)),
        "inputSchema": {
            "type": "object",
            "properties": props,
            "required": sorted(rng.sample(sorted(props), k=rng.randint(0, len(props)))),
            "additionalProperties": False,
            "$schema": "https://json-schema.org/draft/2020-12/schema",
        },
    }
    if rng.random() < 0.5:
        tool["title"] = _sentence(rng, 3)[:-1]
    if rng.random() < 0.4:
        tool["annotations"] = {
            "readOnlyHint": rng.random() < 0.5,
            "destructiveHint": rng.random() < 0.3,
            "idempotentHint": rng.random() < 0.5,
            "openWorldHint": rng.random() < 0.5,
        }
    if rng.random() < 0.3:
        tool["outputSchema"] = {
            "type": "object",
            "properties": {"result": _property(rng, 1), "count": {"type": "integer"}},
            "required": ["result"],
        }
    if rng.random() < 0.1:
        tool["execution"] = {"taskSupport": rng.choice(("optional", "required", "forbidden"))}
    if rng.random() < 0.3:
        tool["_meta"] = {"vendor/version": rng.randint(1, 9), "vendor/trace": _sentence(rng, 3)}
    if rng.random() < 0.2:
        tool["icons"] = [{"src": "https://example.com/icon.png", "mimeType": "image/png"}]
    return tool


def make_typical_tool(rng: random.Random, index: int) -> dict[str, Any]:
    """A schema-dense tool as most servers list them: short descriptions, integer bounds,
    enums, annotations; no floats, ASCII only (about 1.1 KB canonical)."""
    props: dict[str, Any] = {}
    for i in range(rng.randint(4, 10)):
        kind = rng.choice(("string", "integer", "boolean", "array"))
        prop: dict[str, Any] = {"type": kind, "description": _sentence(rng, rng.randint(3, 8))}
        if kind == "string" and rng.random() < 0.4:
            prop["enum"] = [rng.choice(_WORDS) for _ in range(rng.randint(2, 6))]
        if kind == "integer":
            prop["minimum"], prop["maximum"] = 0, rng.randint(10, 1000)
        if kind == "array":
            prop["items"], prop["maxItems"] = {"type": "string"}, 50
        props[f"{rng.choice(_WORDS)}{i}"] = prop
    return {
        "name": f"tool_{index:04d}",
        "title": _sentence(rng, 3)[:-1],
        "description": _sentence(rng, rng.randint(10, 30))
        .replace(".", "")
        .encode("ascii", "ignore")
        .decode(),
        "inputSchema": {
            "type": "object",
            "properties": props,
            "required": sorted(props)[:2],
            "additionalProperties": False,
        },
        "annotations": {
            "readOnlyHint": rng.random() < 0.5,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    }


def make_typical_catalog(n: int = 1000, seed: int = 1) -> list[dict[str, Any]]:
    """A deterministic catalog of ``n`` typical tools."""
    rng = random.Random(seed)
    return [make_typical_tool(rng, i) for i in range(n)]


def make_catalog(n: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """A deterministic catalog of ``n`` tools (shuffled, as a server might list them)."""
    rng = random.Random(seed)
    tools = [make_tool(rng, i) for i in range(n)]
    rng.shuffle(tools)
    return tools


def _median_ms(func: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000.0


def main() -> int:
    lines = [f"# Catalog digest benchmark ({datetime.date.today().isoformat()})", ""]
    lines += [
        f"- python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs",
        "",
    ]
    lines += measure(
        "typical: schema-dense, integer bounds, ASCII (`make_typical_catalog`, seed 1)",
        make_typical_catalog(1000),
    )
    lines += measure(
        "heavy: long descriptions, floats such as 0.0 and 1e-7, emoji (`make_catalog`, seed 0)",
        make_catalog(1000),
    )
    lines += [
        "Medians of 5 (baseline), 11 (cold, uncached), 31 (warm) and 7 (one changed) runs in "
        "one process. Benchmarks report; they do not gate.",
    ]
    print("\n".join(lines))
    results = pathlib.Path(__file__).parent / "results" / "digest.md"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


def measure(label: str, generated: list[dict[str, Any]]) -> list[str]:
    """Measure baseline, cold, uncached and warm digests of one catalog; return report lines."""
    import rfc8785

    from otel_mcp_health.core.digest import CatalogDigester, digest_tools, project_tool

    text = json.dumps(generated)
    catalog = json.loads(text)  # as a client holds it: parsed JSON
    size = len(catalog)

    def baseline() -> str:
        projected = sorted((project_tool(t) for t in catalog), key=lambda t: t["name"])
        return "sha256:" + hashlib.sha256(rfc8785.dumps(projected)).hexdigest()

    def cold() -> str:
        return CatalogDigester().digest(catalog)

    def uncached() -> str:
        return CatalogDigester(max_tools=0).digest(catalog)

    warm_digester = CatalogDigester()
    warm_digester.digest(catalog)

    def warm() -> str:
        return warm_digester.digest(catalog)

    reparsed = [json.loads(text) for _ in range(31)]

    def warm_reparsed() -> str:  # the next tools/list response: equal content, new objects
        return warm_digester.digest(reparsed.pop())

    edited = json.loads(text)
    edited[0]["description"] += " (edited)"

    def one_changed() -> str:  # one tool differs from the cached catalog: per-tool cache path
        digester = CatalogDigester()
        digester.digest(catalog)
        start = time.perf_counter()
        digester.digest(edited)
        one_changed_times.append(time.perf_counter() - start)
        return ""

    reference = baseline()
    assert cold() == reference == warm() == uncached() == digest_tools(catalog), "mismatch"
    canonical_size = len(
        rfc8785.dumps(sorted((project_tool(t) for t in catalog), key=lambda t: t["name"]))
    )
    key_ms = _median_ms(lambda: [marshal.dumps(t, 2) for t in catalog], 15)
    projected_tools = [project_tool(t) for t in catalog]
    stdlib_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    stdlib_ms = _median_ms(lambda: [stdlib_encoder.encode(t) for t in projected_tools], 11)

    base_ms = _median_ms(baseline, 5)
    uncached_ms = _median_ms(uncached, 11)
    cold_ms = _median_ms(cold, 11)
    warm_ms = _median_ms(warm, 31)
    reparsed_ms = _median_ms(warm_reparsed, 31)
    one_changed_times: list[float] = []
    for _ in range(7):
        one_changed()
    changed_ms = statistics.median(one_changed_times) * 1000.0
    return [
        f"## {label}",
        "",
        f"- catalog: {size} tools, {canonical_size / 1e6:.2f} MB canonical JSON",
        f"- baseline, rfc8785.dumps + sha256: {base_ms:.1f} ms",
        f"- uncached digest (max_tools=0): {uncached_ms:.1f} ms "
        f"({base_ms / uncached_ms:.1f}x faster than rfc8785)",
        f"- cold digest (fresh cache, keys computed and stored): {cold_ms:.1f} ms",
        f"- **cold speedup vs rfc8785: {base_ms / cold_ms:.1f}x**",
        f"- **warm: {warm_ms:.2f} ms** (same catalog objects again)",
        f"- warm, re-parsed response (equal content, new objects): {reparsed_ms:.2f} ms",
        f"- one tool of {size} changed: {changed_ms:.2f} ms",
        f"- of which cache keys (marshal v2 of {size} tools): {key_ms:.2f} ms",
        f"- for scale: the stdlib C json encoder alone on the projected tools: {stdlib_ms:.1f} ms "
        f"({base_ms / stdlib_ms:.1f}x faster than rfc8785)",
        "",
    ]


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))
    sys.exit(main())
