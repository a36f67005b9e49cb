"""Typed readers of span attribute values (they come from an untyped mapping), and
:func:`present`, which leaves out what an encoder did not observe."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Attributes = Mapping[str, Any]


def present(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """``attrs`` without the ``None`` values (an absent attribute is *not observed*)."""
    return {key: value for key, value in attrs.items() if value is not None}


def read_str(attrs: Attributes, key: str) -> str | None:
    value = attrs.get(key)
    return value if isinstance(value, str) else None


def read_bool(attrs: Attributes, key: str) -> bool | None:
    value = attrs.get(key)
    return value if isinstance(value, bool) else None


def read_int(attrs: Attributes, key: str) -> int | None:
    value = attrs.get(key)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def read_float(attrs: Attributes, key: str) -> float | None:
    value = attrs.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def read_names(attrs: Attributes, key: str) -> tuple[str, ...]:
    value = attrs.get(key)
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, Sequence):
        return tuple(v for v in value if isinstance(v, str))
    return ()
