"""Deterministic tool catalogs for the digest benchmark (parsed JSON, as a client holds them).

``make_typical_catalog``: schema-dense tools as most servers list them (short descriptions,
integer bounds, enums, annotations; no floats, ASCII descriptions). ``make_catalog``: heavy tools
(long descriptions, floats such as ``0.0`` and ``1e-7``, non-ASCII text and emoji, ``_meta`` and
``icons`` that the projection drops), listed in shuffled order.
"""

from __future__ import annotations

import random
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
