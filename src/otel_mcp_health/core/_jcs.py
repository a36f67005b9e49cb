"""A fast RFC 8785 (JSON Canonicalization Scheme) serializer, byte-identical to ``rfc8785``.

Why JCS: a digest is only comparable across processes, languages and library versions if the
bytes being hashed are defined independently of any serializer's habits (key order, whitespace,
number formatting, escaping). RFC 8785 fixes all four: no whitespace; object members sorted by
the UTF-16 code units of their names; numbers written as ECMAScript's ``Number.toString`` writes
them; strings escaped minimally (only ``"``, ``\\`` and U+0000..U+001F; everything else,
including U+007F and U+2028, is literal UTF-8).

Why not just call ``rfc8785.dumps``: it is a recursive pure-Python writer that, for every member
name, encodes the name to UTF-16 to sort it and runs a regular-expression substitution to escape
it, and makes a call with an ``isinstance`` chain for every value. This module does one pass per
value with three shortcuts, and is checked byte for byte against ``rfc8785`` by a differential
property test (``tests/unit/test_jcs_differential.py``):

* **Object shapes.** Tool schemas repeat the same member-name sets ("shapes") thousands of times
  (``{"type", "description"}``, ``{"type", "properties", "required"}``...). The first time a shape
  is seen, its names are checked, sorted in UTF-16 order and escaped once into ``{"a":`` / ``,"b":``
  prefixes, and an ``operator.itemgetter`` fetches the values in that order. Later objects of the
  same shape (the tuple of their names, compared by equality) cost a dict lookup. A shape whose
  values were all strings last time is written in one C-level ``%`` format.
* **UTF-16 order, once per shape.** Python sorts ``str`` by code point, JCS by UTF-16 code unit.
  The two orders differ only when a supplementary character (U+10000 and above, written in UTF-16
  as a surrogate pair D800..DFFF) meets a BMP character in U+E000..U+FFFF at the first differing
  position: by code point the supplementary character is larger, by code unit smaller. Characters
  below U+D800 compare the same either way and lone surrogates are rejected. Sorting each shape
  by ``name.encode("utf-16-be")`` once makes the question moot.
* **Strings and numbers.** Strings go through the C escaper of the ``json`` module
  (``json.encoder.encode_basestring``), whose escaping is exactly JCS's: ``\\b \\f \\n \\r \\t``,
  ``\\"``, ``\\\\``, lowercase ``\\u00XX`` for other controls, nothing else. Lone surrogates pass
  through it and are rejected by the final strict UTF-8 encode, as ``rfc8785`` rejects them.
  Integers outside ±(2**53 - 1) are rejected (a double cannot hold them exactly). Floats are laid
  out by :func:`format_float` from ``repr``'s shortest round-trip digits.

Depth: containers nested deeper than :data:`MAX_DEPTH` are rejected. ``rfc8785`` fails with
``RecursionError`` at a depth that depends on the caller's stack; a fixed limit gives the same
answer wherever the digest is computed. Cycles are rejected by the same limit.

Subclasses of ``int``, ``float``, ``str``, ``list``/``tuple`` and ``dict`` are normalized the way
``rfc8785`` normalizes them (``int(x)``, ``float(x)``, the characters, ``list(x)``, ``dict(x)``);
other types (``set``, ``bytes``, arbitrary objects) are rejected.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from operator import itemgetter
from typing import Any, Final

__all__ = ["MAX_DEPTH", "JcsError", "canonicalize", "canonicalize_text", "format_float"]

#: Deepest container nesting accepted (the top-level value is depth 0).
MAX_DEPTH: Final = 500
_INT_MAX: Final = 2**53 - 1
#: Shapes remembered before the shape table is reset (it only ever costs a re-computation), and
#: the most members a remembered shape may have (bigger objects get a throw-away shape), which
#: together bound the table's memory whatever the input.
_MAX_SHAPES: Final = 16384
_MAX_SHAPE_MEMBERS: Final = 64

_escape: Final[Callable[[str], str]] = json.encoder.encode_basestring


class JcsError(ValueError):
    """The value has no RFC 8785 form. ``kind`` is a short class name; it never holds values."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def format_float(value: float) -> str:
    """ECMAScript ``Number.prototype.toString`` of a finite double (RFC 8785 §3.2.2.3).

    ``repr`` already yields the shortest digits that round-trip, which is the digit string ES6
    requires; only the layout differs. Between 1e-4 and 1e16 ``repr`` writes fixed notation, like
    ES6, except for a trailing ``.0`` on integral values. Elsewhere the digits are re-laid out:
    plain integers up to 21 digits, ``0.000001`` down to 1e-6, exponent notation (``1e+21``,
    ``1.5e-7``) beyond. ``-0.0`` is written ``0``.
    """
    if value == 0:
        return "0"
    text = repr(value)
    if "e" not in text:
        if text[-1] == "0" and text[-2] == ".":  # "100.0" -> "100"
            return text[:-2]
        if "." in text:
            return text
        raise JcsError("NonFiniteFloat")  # "inf", "nan"
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exp_text = text.partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).rstrip("0")  # repr's mantissa starts with a non-zero digit
    n = len(int_part) + int(exp_text)  # value = 0.<digits> * 10**n (ES6's n)
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * -n + digits
    else:
        e = n - 1
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + ("e+" if e > 0 else "e-")
        body += str(abs(e))
    return sign + body


class _Shape:
    """How to write every object with one tuple of member names (see the module docstring)."""

    __slots__ = ("all_str", "getter", "prefixes", "template")

    def __init__(self, names: tuple[str, ...]) -> None:
        try:
            order = sorted(names, key=lambda name: name.encode("utf-16-be"))
        except UnicodeEncodeError:
            raise JcsError("InvalidUnicode") from None
        self.prefixes: tuple[str, ...] = tuple(
            ("{" if index == 0 else ",") + _escape(name) + ":" for index, name in enumerate(order)
        )
        self.template = "".join(prefix.replace("%", "%%") + "%s" for prefix in self.prefixes) + "}"
        self.getter: Callable[[dict[str, Any]], Any] = itemgetter(*order)
        if len(order) == 1:
            only = order[0]
            self.getter = lambda obj: (obj[only],)
        self.all_str = True  # a guess, corrected by the first object that disagrees


_SHAPES: dict[tuple[Any, ...], _Shape] = {}


def _shape(names: tuple[Any, ...]) -> _Shape:
    for name in names:
        if type(name) is not str:
            raise _NotPlain
    shape = _Shape(names)
    if len(names) <= _MAX_SHAPE_MEMBERS:
        if len(_SHAPES) >= _MAX_SHAPES:
            _SHAPES.clear()
        _SHAPES[names] = shape
    return shape


class _NotPlain(Exception):
    """Internal: a dict with a non-``str`` key; handled by :func:`_plain_keys`."""


def _plain_keys(obj: dict[Any, Any]) -> dict[str, Any]:
    if not all(isinstance(key, str) for key in obj):
        raise JcsError("NonStringKey")
    result = {str.__str__(key): value for key, value in obj.items()}
    if len(result) != len(obj):
        raise JcsError("DuplicateKey")
    return result


# ``_write_dict`` and ``_write_list`` each inline the same type dispatch on purpose: a shared
# ``_write_value`` helper adds a Python frame per nesting level, which halves the depth reachable
# before ``RecursionError`` (``MAX_DEPTH`` must stay reachable from a deep caller) and costs a call
# per value on the hot path.
def _write_dict(obj: dict[Any, Any], out: list[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise JcsError("NestingTooDeep")
    if not obj:
        out.append("{}")
        return
    names = tuple(obj)
    shape = _SHAPES.get(names)
    if shape is None:
        try:
            shape = _shape(names)
        except _NotPlain:
            _write_dict(_plain_keys(obj), out, depth)
            return
    values = shape.getter(obj)
    if shape.all_str:
        try:
            out.append(shape.template % tuple(map(_escape, values)))
            return
        except TypeError:
            shape.all_str = False
    append = out.append
    depth += 1
    for prefix, value in zip(shape.prefixes, values, strict=True):
        append(prefix)
        vtype = type(value)
        if vtype is str:
            append(_escape(value))
        elif vtype is dict:
            _write_dict(value, out, depth)
        elif vtype is list:
            _write_list(value, out, depth)
        elif vtype is bool:
            append("true" if value else "false")
        elif vtype is int:
            if not -_INT_MAX <= value <= _INT_MAX:
                raise JcsError("IntegerOutOfRange")
            append(repr(value))
        elif value is None:
            append("null")
        elif vtype is float:
            append(format_float(value))
        else:
            _write_other(value, out, depth)
    append("}")


def _write_list(obj: list[Any], out: list[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise JcsError("NestingTooDeep")
    if not obj:
        out.append("[]")
        return
    append = out.append
    if type(obj[0]) is str:
        try:
            append("[" + ",".join(map(_escape, obj)) + "]")
            return
        except TypeError:
            pass
    append("[")
    depth += 1
    for value in obj:
        vtype = type(value)
        if vtype is str:
            append(_escape(value))
        elif vtype is dict:
            _write_dict(value, out, depth)
        elif vtype is list:
            _write_list(value, out, depth)
        elif vtype is bool:
            append("true" if value else "false")
        elif vtype is int:
            if not -_INT_MAX <= value <= _INT_MAX:
                raise JcsError("IntegerOutOfRange")
            append(repr(value))
        elif value is None:
            append("null")
        elif vtype is float:
            append(format_float(value))
        else:
            _write_other(value, out, depth)
        append(",")
    out[-1] = "]"


def _write_other(value: Any, out: list[str], depth: int) -> None:
    """Any value, including subclasses, normalized as ``rfc8785`` does, or rejected."""
    if value is None:
        out.append("null")
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, int):
        number = int(value)
        if not -_INT_MAX <= number <= _INT_MAX:
            raise JcsError("IntegerOutOfRange")
        out.append(repr(number))
    elif isinstance(value, str):
        out.append(_escape(str.__str__(value)))
    elif isinstance(value, float):
        out.append(format_float(float(value)))
    elif isinstance(value, list | tuple):
        _write_list(value if type(value) is list else list(value), out, depth)
    elif isinstance(value, dict):
        _write_dict(value if type(value) is dict else dict(value), out, depth)
    else:
        raise JcsError("UnsupportedType")


def canonicalize_text(value: Any) -> str:
    """The RFC 8785 text of ``value``; raises :class:`JcsError` if it has none.

    The text may still hold lone surrogates; :func:`canonicalize` rejects them when encoding.
    """
    out: list[str] = []
    try:
        _write_other(value, out, 0)
    except JcsError:
        raise
    except RecursionError:
        raise JcsError("NestingTooDeep") from None
    except Exception as exc:  # user __int__/__float__/__iter__ code and the like
        raise JcsError(type(exc).__name__) from None
    return "".join(out)


# ---- the fast path: the C ``json`` encoder, for the common, plain case --------------------------
#: The C encoder with ``sort_keys`` (code-point order) and ASCII output: its escapes are undone
#: below for every character that JCS writes literally.
_encode_ascii: Final = json.JSONEncoder(
    ensure_ascii=True, separators=(",", ":"), sort_keys=True, allow_nan=False
).encode
#: An ASCII escape: a surrogate pair (one supplementary character), one ``\uXXXX``, or a
#: two-character escape (matched so that scanning never starts inside one, e.g. ``\\u0041``).
_ESCAPE: Final = re.compile(r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|\\u([0-9a-f]{4})|\\.")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
#: Key characters that make code-point order differ from UTF-16 order, or that JCS rejects.
_UNSAFE_KEY: Final = re.compile("[\ud800-\udfff\U00010000-\U0010ffff]")


def _literal(match: re.Match[str]) -> str:
    high, low, single = match.groups()
    if high is not None:
        code = 0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00)
        return chr(code)
    if single is None:
        return match.group(0)  # \" \\ \b \f \n \r \t are JCS escapes too
    code = int(single, 16)
    return match.group(0) if code < 0x20 else chr(code)


def _is_plain(value: Any) -> bool:
    """Whether the C encoder writes ``value`` exactly as JCS does.

    That holds when it contains only exact ``dict``/``list``/``str``/``bool``/``None``, safe
    ``int`` values, floats whose ``repr`` is their ECMAScript form and strings without lone
    surrogates, has string keys without
    supplementary characters (so code-point order is UTF-16 order), and nests at most
    :data:`MAX_DEPTH` deep."""
    if type(value) is not dict and type(value) is not list:
        return False
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        container, depth = pop()
        if depth > MAX_DEPTH:
            return False
        if type(container) is dict:
            for key in container:
                if type(key) is not str:
                    return False
                if not key.isascii() and _UNSAFE_KEY.search(key):
                    return False  # UTF-16 order may differ, or a lone surrogate
            items = container.values()
        else:
            items = container
        for item in items:
            kind = type(item)
            if kind is str:
                if item.isascii() or not _SURROGATE.search(item):
                    continue
                return False  # a lone surrogate: the slow path rejects it
            if kind is bool or item is None:
                continue
            if kind is int:
                if -_INT_MAX <= item <= _INT_MAX:
                    continue
                return False
            if kind is dict or kind is list:
                push((item, depth + 1))
                continue
            if kind is float and _repr_is_ecmascript(item):
                continue
            return False
    return True


def _repr_is_ecmascript(value: float) -> bool:
    """Whether the C encoder's ``repr`` of a float is already its ES6 form (e.g. ``-1.5``)."""
    try:
        return format_float(value) == float.__repr__(value)
    except JcsError:
        return False  # NaN and infinities: the slow path rejects them


def _fast_text(value: Any) -> str | None:
    """The JCS text via the C encoder, or ``None`` when the slow path must decide.

    The ASCII output's ``\\uXXXX`` escapes are turned back into literal characters (surrogate
    pairs into one supplementary character), except for controls below U+0020, which JCS escapes
    the same way. Strings holding lone surrogates never get here (the slow path rejects them), so
    every escaped surrogate pair stands for one supplementary character."""
    if not _is_plain(value):
        return None
    try:
        text: str = _encode_ascii(value)
    except (ValueError, RecursionError):  # a cycle: let the slow path name the error
        return None
    if "\\u" in text:
        text = _ESCAPE.sub(_literal, text)
    return text


def canonicalize(value: Any) -> bytes:
    """The RFC 8785 bytes of ``value`` (equal to ``rfc8785.dumps(value)``); :class:`JcsError`
    for anything JCS cannot represent (see the module docstring).

    Plain values (no floats, no supplementary characters, exact built-in types) take the C
    encoder; everything else takes the one-pass writer above. The differential property tests
    drive both paths against ``rfc8785``."""
    fast = _fast_text(value)
    if fast is not None:
        return fast.encode("utf-8")
    try:
        return canonicalize_text(value).encode("utf-8")
    except UnicodeEncodeError:
        raise JcsError("InvalidUnicode") from None
