"""Templates of an outcome policy: ``"/srv/out/{name}.csv"`` over a call's top-level arguments.

``{name}`` is replaced by the call's argument ``name`` (a string or a number), ``{{`` and ``}}``
are literal braces; nothing else is a placeholder (no attribute or index access, no conversion,
no format spec). Templates are expanded in memory, at verification time: the expanded path or URL,
and the argument values in it, are never exported, logged or put in a message. A call that lacks
a named argument, or whose argument is not a string or a number, cannot be expanded:
:class:`Unexpandable` carries the reason code of the ``inconclusive`` receipt it gives.
"""

from __future__ import annotations

import re
import string
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

#: Reason codes of the ``inconclusive`` receipts of a template that cannot be expanded.
REASON_ARGUMENT_MISSING: Final = "argument_missing"
REASON_ARGUMENT_NOT_SCALAR: Final = "argument_not_scalar"

#: What a placeholder may name: one top-level argument.
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


class TemplateError(ValueError):
    """A template that cannot be parsed; the message never quotes the template."""


class Unexpandable(Exception):  # noqa: N818 - a control-flow signal, caught by the verifier that expands
    """A call whose arguments cannot fill the template; ``reason`` is a receipt reason code."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def argument(arguments: Mapping[str, Any], name: str) -> str | int | float:
    """The call's argument ``name`` when it is a string or a number (else :class:`Unexpandable`)."""
    if name not in arguments:
        raise Unexpandable(REASON_ARGUMENT_MISSING)
    value = arguments[name]
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise Unexpandable(REASON_ARGUMENT_NOT_SCALAR)
    return value


@dataclass(frozen=True, slots=True)
class Template:
    """A parsed template: literal text and placeholders, in order."""

    parts: tuple[tuple[str, str | None], ...]

    @classmethod
    def parse(cls, text: str) -> Template:
        """Parse ``text``; raises :class:`TemplateError` on a brace or placeholder it rejects."""
        try:
            parsed = list(string.Formatter().parse(text))
        except ValueError:
            raise TemplateError("unbalanced braces (write {{ and }} for literal ones)") from None
        parts: list[tuple[str, str | None]] = []
        for literal, name, spec, conversion in parsed:
            if name is not None and (spec or conversion or not _NAME.fullmatch(name)):
                raise TemplateError("a placeholder names one argument, e.g. {path}")
            parts.append((literal, name))
        return cls(tuple(parts))

    @classmethod
    def literal(cls, text: str) -> Template:
        """A template without placeholders whose expansion is ``text`` itself."""
        return cls(((text, None),))

    @property
    def fields(self) -> tuple[str, ...]:
        """The argument names the template reads, in order, each once."""
        return tuple(dict.fromkeys(name for _, name in self.parts if name is not None))

    @property
    def prefix(self) -> str:
        """The literal text before the first placeholder."""
        head = []
        for literal, name in self.parts:
            head.append(literal)
            if name is not None:
                break
        return "".join(head)

    def expand(self, arguments: Mapping[str, Any], *, quote: bool = False) -> str:
        """The text with each placeholder replaced by its argument.

        With ``quote`` (URLs), a value inside the text is percent-encoded, so it cannot add a
        path segment, a query or a host; a placeholder that is the whole template is not.
        """
        whole = len(self.parts) == 1 and not self.parts[0][0]
        out: list[str] = []
        for literal, name in self.parts:
            out.append(literal)
            if name is not None:
                value = str(argument(arguments, name))
                out.append(urllib.parse.quote(value, safe="") if quote and not whole else value)
        return "".join(out)
