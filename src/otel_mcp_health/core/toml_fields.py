"""Strict readers of TOML fields, shared by the pin file, the outcome policy and the probe's
configuration.

Each reader returns the value when it fits its key and raises :class:`FieldError` otherwise;
the message says what the key expects and never quotes the value (a file's strings may be a
server's or an attacker's). Each format turns the error into its own report.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Generic, TypeVar

#: The position part of a ``tomllib`` syntax error, the only part a report may show: the rest of
#: the parser's message may quote the offending text.
_POSITION: Final = re.compile(r"\(at (?:line \d+, column \d+|end of document)\)")


#: What a refused file's problems are: plain strings, or a format's own problem records.
ProblemT = TypeVar("ProblemT")


class RefusedFileError(Exception, Generic[ProblemT]):
    """A file that is refused whole: its source and every problem found, never a value of it.
    The message is the source and the first problem."""

    def __init__(self, source: str, problems: Sequence[ProblemT]) -> None:
        self.source, self.problems = source, tuple(problems)
        super().__init__(f"{source}: {self.problems[0]}")


class FieldError(Exception):
    """One value that does not fit its key (the message describes the expectation only)."""


def syntax_position(exc: tomllib.TOMLDecodeError) -> str | None:
    """Where a TOML syntax error is (``(at line 3, column 7)``), or ``None`` when not said."""
    where = _POSITION.search(str(exc))
    return where.group(0) if where else None


def unknown_keys(table: Mapping[str, Any], allowed: Iterable[str]) -> list[str]:
    """The keys of ``table`` not in ``allowed``, in file order."""
    known = frozenset(allowed)
    return [key for key in table if key not in known]


def text(value: Any) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value:
        raise FieldError("expects a non-empty string")
    return value


def flag(value: Any) -> bool:
    """``true`` or ``false`` (never a number or a string)."""
    if not isinstance(value, bool):
        raise FieldError("expects true or false")
    return value


def positive_seconds(value: Any) -> float:
    """A finite number of seconds above zero (an integer or a float, never a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FieldError("expects a number of seconds")
    if not (value > 0 and math.isfinite(value)):
        raise FieldError("expects a positive number of seconds")
    return float(value)


def positive_count(value: Any) -> int:
    """A whole number of at least one (never a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FieldError("expects a positive whole number")
    return value


def choice(options: tuple[str, ...]) -> Callable[[Any], str]:
    """A reader of one of ``options``."""

    def check(value: Any) -> str:
        if value not in options:
            raise FieldError("expects one of " + ", ".join(options))
        return str(value)

    return check
