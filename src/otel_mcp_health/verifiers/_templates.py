"""Templates of an outcome policy: ``"/srv/out/{name}.csv"`` over a call's top-level arguments.

``{name}`` is replaced by the call's argument ``name`` (a string or a number), ``{{`` and ``}}``
are literal braces; nothing else is a placeholder (no attribute or index access, no conversion,
no format spec). Templates are expanded in memory, at verification time: the expanded path or URL,
and the argument values in it, are never exported, logged or put in a message.

**Arguments are data, never structure** (docs/outcomes.md#arguments-are-data). The arguments come
from the model, which a prompt injection can steer, so the policy's literal text decides where a
verifier looks and an argument only fills a name inside it:

* a path template's literal prefix names its base directory (:attr:`Template.base`); the expanded
  path, resolved with its symlinks, must stay under it (:meth:`Template.expand_path`);
* a URL template's scheme, host and port are literal (:func:`fixed_origin`, checked when the
  policy loads), and a value is percent-encoded and cannot be a dot segment
  (:meth:`Template.expand_url`);
* a value that is ``.`` or ``..``, absolute, or holds a NUL byte or (in a path) a separator is
  refused (:func:`segment`).

A call whose arguments cannot fill a template raises :class:`Unexpandable` with the reason code
and result of the receipt it gives: ``inconclusive`` when an argument is missing or not a scalar
(no evidence), ``failed`` when an argument tries to leave the policy's scope (evidence of a
problem, never a pass).
"""

from __future__ import annotations

import os
import re
import string
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Final

from otel_mcp_health.core.reasons import ReceiptReason
from otel_mcp_health.core.vocabulary import OutcomeResult

#: What a placeholder may name: one top-level argument.
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
#: The literal start a URL template needs before its first placeholder: scheme, host and
#: optional port, ended by ``/``, ``?`` or ``#`` (no user info: ``http://a@{host}`` is refused).
_ORIGIN: Final = re.compile(r"https?://[^/?#@{}\s]+[/?#]", re.IGNORECASE)
#: Path separators of this platform (``/``, and ``\`` on Windows).
_SEPARATORS: Final = tuple(sep for sep in (os.sep, os.altsep) if sep)
_DOTS: Final = frozenset({".", ".."})


class TemplateError(ValueError):
    """A template that cannot be parsed; the message never quotes the template."""


class Unexpandable(Exception):  # noqa: N818 - a control-flow signal, caught by the verifier that expands
    """A call whose arguments cannot fill the template: the receipt's ``reason`` and ``result``."""

    def __init__(self, reason: str, result: OutcomeResult = OutcomeResult.INCONCLUSIVE) -> None:
        super().__init__(reason)
        self.reason, self.result = reason, result


def _unsafe() -> Unexpandable:
    return Unexpandable(ReceiptReason.ARGUMENT_UNSAFE, OutcomeResult.FAILED)


def argument(arguments: Mapping[str, Any], name: str) -> str | int | float:
    """The call's argument ``name`` when it is a string or a number (else :class:`Unexpandable`)."""
    if name not in arguments:
        raise Unexpandable(ReceiptReason.ARGUMENT_MISSING)
    value = arguments[name]
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise Unexpandable(ReceiptReason.ARGUMENT_NOT_SCALAR)
    return value


def segment(value: str, *, path: bool) -> str:
    """``value`` when it can only fill a name: not ``.`` or ``..``, no NUL byte and, in a path
    (``path``), neither absolute nor holding a separator; else :class:`Unexpandable` (failed)."""
    if value in _DOTS or "\0" in value:
        raise _unsafe()
    if path and (
        any(sep in value for sep in _SEPARATORS) or Path(value).is_absolute() or Path(value).drive
    ):
        raise _unsafe()
    return value


def fixed_origin(template: Template) -> bool:
    """Whether the template's scheme, host and port are literal (a placeholder comes only after
    the ``/``, ``?`` or ``#`` that ends them); a template without placeholders always is."""
    return not template.fields or _ORIGIN.match(template.prefix) is not None


def literal_dot_segment(template: Template) -> bool:
    """Whether the URL template's literal text holds a ``.`` or ``..`` path segment (values
    may not make one, so :meth:`Template.expand_url` would refuse every call)."""
    if not template.fields:
        return False
    text = template.expand(dict.fromkeys(template.fields, "x"))
    return _has_dot_segment(text)


def _has_dot_segment(url: str) -> bool:
    return bool(_DOTS.intersection(urllib.parse.urlsplit(url).path.split("/")))


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

    @property
    def base(self) -> str | None:
        """A path template's base directory: its literal prefix up to the last separator
        (``"/srv/out/"`` for ``"/srv/out/{name}.csv"``); ``None`` when the prefix names no
        directory (``"{path}"``, ``"out-{n}"``) or names the filesystem root (``"/{dir}/{name}"``,
        ``"/srv/../{name}"``: arguments would choose any file, as with ``"{path}"``), which a
        policy refuses for a template with placeholders."""
        prefix = self.prefix
        cut = max(prefix.rfind(sep) for sep in _SEPARATORS)
        if cut < 0:
            return None
        base = prefix[: cut + 1]
        normal = PurePath(os.path.normpath(base))
        return None if normal.anchor and normal == PurePath(normal.anchor) else base

    def expand(self, arguments: Mapping[str, Any]) -> str:
        """The text with each placeholder replaced by its argument, as is (a digest, a value)."""
        return self._fill(arguments, lambda value: value)

    def expand_path(self, arguments: Mapping[str, Any]) -> Path:
        """The path, each value checked by :func:`segment`; with placeholders, resolved (symlinks
        included) and required to stay under :attr:`base` (else ``path_outside_base``, failed).

        The base is resolved now too, so a relative one is relative to the current directory.
        """
        text = self._fill(arguments, lambda value: segment(value, path=True))
        if not self.fields:
            return Path(text)
        base = Path(self.base or ".").resolve()
        resolved = Path(text).resolve()
        if not resolved.is_relative_to(base):
            raise Unexpandable(ReceiptReason.PATH_OUTSIDE_BASE, OutcomeResult.FAILED)
        return resolved

    def expand_url(self, arguments: Mapping[str, Any]) -> str:
        """The URL, each value checked by :func:`segment` and percent-encoded (so it cannot add a
        path segment, a query or a host), with no ``.`` or ``..`` path segment once expanded."""
        text = self._fill(
            arguments, lambda value: urllib.parse.quote(segment(value, path=False), safe="")
        )
        if self.fields and _has_dot_segment(text):
            raise _unsafe()
        return text

    def _fill(self, arguments: Mapping[str, Any], checked: Callable[[str], str]) -> str:
        out: list[str] = []
        for literal, name in self.parts:
            out.append(literal)
            if name is not None:
                out.append(checked(str(argument(arguments, name))))
        return "".join(out)
