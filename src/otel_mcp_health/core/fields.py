"""Typed, path-aware reads of decoded JSON, for the evidence format's parser (:mod:`.records`).

A wrong field raises :class:`InvalidField` with the field's path and the expected shape. The
message names the *type* of what was found, never the value (it may be a secret).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_T = TypeVar("_T")


class InvalidField(Exception):  # noqa: N818 - a record's rejection reason, caught where the record is read
    """A field of the wrong shape: its path (``a.b[2].c``) and the shape expected there."""

    def __init__(self, field: str, expected: str) -> None:
        super().__init__(field, expected)
        self.field = field
        self.expected = expected


def type_name(value: object) -> str:
    """The JSON type of ``value``, as an error message names it (never the value itself)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


class JsonObject:
    """A JSON object with its path, offering typed, path-aware getters."""

    def __init__(self, data: object, path: str) -> None:
        if not isinstance(data, dict):
            raise InvalidField(path, f"an object, got {type_name(data)}")
        self.data: dict[str, Any] = data
        self.path = path

    def _p(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str) -> object:
        return self.data.get(key)

    def obj(self, key: str) -> JsonObject | None:
        value = self.data.get(key)
        return None if value is None else JsonObject(value, self._p(key))

    def str_(self, key: str, *, required: bool = False) -> str | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise InvalidField(self._p(key), "a string (required)")
            return None
        if not isinstance(value, str):
            raise InvalidField(self._p(key), f"a string, got {type_name(value)}")
        return value

    def bool_(self, key: str) -> bool | None:
        value = self.data.get(key)
        if value is None or isinstance(value, bool):
            return value
        raise InvalidField(self._p(key), f"true, false or null, got {type_name(value)}")

    def int_(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidField(self._p(key), f"an integer or null, got {type_name(value)}")
        return value

    def num(self, key: str) -> float | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidField(self._p(key), f"a number or null, got {type_name(value)}")
        if not math.isfinite(value) or value < 0:
            raise InvalidField(self._p(key), "a finite, non-negative number")
        return float(value)

    def time(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        return rfc3339_ns(value, self._p(key))

    def enum(self, key: str, choices: Callable[[str], _T], names: str) -> _T | None:
        value = self.str_(key)
        if value is None:
            return None
        try:
            return choices(value)
        except ValueError:
            raise InvalidField(self._p(key), f"one of {names}") from None

    def list_(self, key: str) -> list[tuple[object, str]] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise InvalidField(self._p(key), f"an array or null, got {type_name(value)}")
        return [(item, f"{self._p(key)}[{i}]") for i, item in enumerate(value)]


def rfc3339_ns(value: object, path: str) -> int:
    """An RFC 3339 time string as ``int`` nanoseconds since the epoch."""
    if not isinstance(value, str):
        raise InvalidField(path, f"an RFC 3339 time string, got {type_name(value)}")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidField(path, "an RFC 3339 time such as 2026-11-30T10:00:00Z") from None
    if moment.tzinfo is None:
        raise InvalidField(path, "an RFC 3339 time with a UTC offset or Z")
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1000


def choice_names(enum: Any) -> str:
    """The values of an enumeration, as an expected shape lists them."""
    return ", ".join(member.value for member in enum)


def str_list(items: list[tuple[object, str]] | None) -> tuple[str, ...] | None:
    """The items of :meth:`JsonObject.list_` that must all be strings."""
    if items is None:
        return None
    out = []
    for item, path in items:
        if not isinstance(item, str):
            raise InvalidField(path, f"a string, got {type_name(item)}")
        out.append(item)
    return tuple(out)
