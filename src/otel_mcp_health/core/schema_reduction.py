"""A tool's parameter schema reduced to what survives framework rewriting (docs/model.md#agents).

Frameworks rewrite the schemas they offer their model (strict mode, titles, ``anyOf`` with
``null``, inlined ``$ref`` s); :func:`reduced_schema` takes those differences out, on the offered
and on the discovered side alike, so that two reductions are equal when the tool is the same.
Pure, and bounded: schemas are attacker-controlled input.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

#: How deep and how large a schema the reduction walks; past either the schema is unreadable
#: (a marker no discovered schema equals).
MAX_SCHEMA_DEPTH: Final = 64
MAX_SCHEMA_NODES: Final = 20_000
#: Schema keys that framework rewriting adds, drops or changes without changing the tool.
_REWRITTEN_KEYS: Final = frozenset(
    {
        "title",
        "description",
        "additionalProperties",
        "strict",
        "$schema",
        "$defs",
        "definitions",
        "required",
        "nullable",
        "examples",
    }
)
#: Keys whose value maps names (of properties) to schemas: the names are kept as they are.
_NAMED_SCHEMAS: Final = frozenset({"properties", "patternProperties"})
_UNREADABLE: Final = {"$unreadable": True}


def reduced_schema(schema: Any) -> Any:
    """A parameter schema with what framework rewriting changes taken out (the rewrites listed in
    :mod:`otel_mcp_health.core.offered`):
    ``$ref`` s into ``$defs`` / ``definitions`` inlined, the keys of :data:`_REWRITTEN_KEYS`
    dropped, ``anyOf`` / ``oneOf`` / ``type`` lists without their ``null`` member, ``default:
    null`` dropped, and no schema or an object without properties read as an empty object. An
    unreadable schema (too deep, too large, not JSON) reduces to a marker no schema equals."""
    if schema is None:
        schema = {}
    if not isinstance(schema, Mapping):
        return _UNREADABLE
    defs = {**_defs(schema, "definitions"), **_defs(schema, "$defs")}
    walk = _Reduction(defs)
    try:
        reduced = walk.node(schema, 0)
    except _UnreadableError:
        return _UNREADABLE
    if isinstance(reduced, dict):
        if reduced.get("type") in (None, "object") and "properties" not in reduced:
            reduced["properties"] = {}
        reduced.setdefault("type", "object")
    return reduced


class _UnreadableError(Exception):
    """A schema past the bounds, or holding what JSON cannot."""


class _Reduction:
    def __init__(self, defs: Mapping[str, Any]) -> None:
        self._defs = defs
        self._nodes = 0
        self._inlining: list[str] = []

    def node(self, value: Any, depth: int) -> Any:
        self._nodes += 1
        if depth > MAX_SCHEMA_DEPTH or self._nodes > MAX_SCHEMA_NODES:
            raise _UnreadableError
        if isinstance(value, Mapping):
            return self._mapping(value, depth)
        if isinstance(value, list | tuple):
            return [self.node(item, depth + 1) for item in value]
        if value is None or isinstance(value, str | bool | int):
            return value
        if isinstance(value, float) and math.isfinite(value):
            return value
        raise _UnreadableError

    def _mapping(self, value: Mapping[Any, Any], depth: int) -> Any:
        ref = value.get("$ref")
        if isinstance(ref, str) and ref in self._defs and ref not in self._inlining:
            self._inlining.append(ref)
            try:
                return self.node(self._defs[ref], depth + 1)
            finally:
                self._inlining.pop()
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _UnreadableError
            if key in _REWRITTEN_KEYS or (key == "default" and item is None):
                continue
            if key in _NAMED_SCHEMAS and isinstance(item, Mapping):
                out[key] = self._named(item, depth + 1)  # property names, never keywords
            else:
                out[key] = self.node(item, depth + 1)
        if out.get("type") == "object" and "properties" not in out:
            out["properties"] = {}
        return _without_null(out)

    def _named(self, schemas: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        if any(not isinstance(name, str) for name in schemas):
            raise _UnreadableError
        return {name: self.node(item, depth + 1) for name, item in schemas.items()}


def _without_null(schema: dict[str, Any]) -> Any:
    """``anyOf`` / ``oneOf`` / ``type`` without their ``null`` member; one left is the schema."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        schema["type"] = kinds[0] if len(kinds) == 1 else kinds
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if not isinstance(options, list):
            continue
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1 and isinstance(kept[0], dict):
            del schema[key]
            return {**kept[0], **schema}
        schema[key] = kept
    return schema


def _defs(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    found = schema.get(key)
    if not isinstance(found, Mapping):
        return {}
    return {f"#/{key}/{name}": value for name, value in found.items() if isinstance(name, str)}


__all__ = ["MAX_SCHEMA_DEPTH", "MAX_SCHEMA_NODES", "reduced_schema"]
