"""RFC 8785 (JCS) canonical bytes: ``rfc8785`` is the exact path, a C encoder the guarded fast one.

A digest is comparable across processes, languages and library versions only if the hashed bytes
are defined independently of any serializer's habits; RFC 8785 fixes them (no whitespace, members
sorted by UTF-16 code units, ECMAScript number text, minimal string escapes). The ``rfc8785``
package writes exactly that, in pure Python, one call per value. This module asks a C encoder
for the same bytes where the input allows it and checks, on the encoder's output, every place
where the two could differ:

* **Types.** The fast path runs only on values that have a :func:`type_proof`: it refuses every
  subclass and foreign object, so only exact ``dict``/``list``/``tuple``/``str``/``int``/
  ``float``/``bool``/``None`` (plus ``bytes``, which the encoders refuse) remain. Enums, UUIDs,
  dataclasses, mappings and misbehaving subclasses take the exact path, which normalizes or
  rejects them as ``rfc8785`` does.
* **Keys.** Both encoders sort keys by code point; JCS sorts by UTF-16 code unit. The two orders
  differ only for supplementary characters (lone surrogates make the encoders or the UTF-8 encode
  fail), so a key holding one sends the value to the exact path. ``orjson`` refuses non-``str``
  keys; the standard library's encoder would write ``1`` as ``"1"``, so its path checks keys.
* **Numbers.** Integers outside +/-(2**53 - 1) are refused (``orjson``'s strict mode, a digit
  count for the standard library's). Floats are written by both as shortest round-trip digits,
  which are ECMAScript's digits, but not in its layout (``1e-07``, ``1e+21``, ``100.0``); each
  float token outside strings is rewritten by ``rfc8785``'s own writer. ``orjson`` writes NaN and
  infinities as ``null``; a non-finite double in the proof's bytes sends the value to the exact
  path, which rejects it (the standard library's encoder refuses them itself).
* **Strings.** Both escape exactly as JCS does (``\\"``, ``\\\\``, ``\\b \\f \\n \\r \\t``,
  lowercase ``\\u00XX`` for other controls, everything else literal UTF-8).
* **Depth.** Values nested deeper than :data:`MAX_DEPTH` are rejected on every path, so the answer
  does not depend on the caller's stack (``rfc8785`` recurses; ``orjson`` stops at 255 levels and
  hands deeper values to the exact path).

``orjson`` is used when importable (the ``otel-mcp-health[fast]`` extra); otherwise the standard
library's C encoder. ``benchmarks/bench_digest.py`` measures all three paths; differential property
tests (``tests/unit/test_jcs_differential.py``) check each against ``rfc8785`` byte for byte.
"""

from __future__ import annotations

import functools
import json
import pickle
import re
from collections import deque
from collections.abc import Callable
from typing import Any, Final, cast

import rfc8785

__all__ = [
    "ENCODER",
    "MAX_DEPTH",
    "JcsError",
    "canonicalize",
    "exact",
    "type_proof",
    "type_proofs",
]

#: Deepest container nesting accepted (the top-level value is depth 0).
MAX_DEPTH: Final = 500
_SAFE_DIGITS: Final = 16  # 2**53 - 1 has 16 digits: shorter integers are always in range


class JcsError(ValueError):
    """The value has no RFC 8785 form. ``kind`` is a short class name; it never holds values."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class _Defer(Exception):  # noqa: N818 - a control-flow signal (hand over to the exact encoder), never raised out
    """Internal: the fast path cannot decide; the exact path will."""


# ---- the exact path ------------------------------------------------------------------------------
_KINDS: Final = {
    rfc8785.IntegerDomainError: "IntegerOutOfRange",
    rfc8785.FloatDomainError: "NonFiniteFloat",
    UnicodeEncodeError: "InvalidUnicode",  # a lone surrogate in a key (UTF-16 sort key)
    RecursionError: "NestingTooDeep",
}


def exact(value: Any) -> bytes:
    """``rfc8785.dumps(value)`` within :data:`MAX_DEPTH`, its errors as :class:`JcsError`."""
    try:
        if _deeper_than(value, MAX_DEPTH):
            raise JcsError("NestingTooDeep")
        return rfc8785.dumps(value)
    except JcsError:
        raise
    except rfc8785.CanonicalizationError as exc:
        raise JcsError(_KINDS.get(type(exc), _canonicalization_kind(exc))) from None
    except Exception as exc:  # noqa: BLE001 - user __int__/__iter__ code, RecursionError from a deep caller...
        raise JcsError(_KINDS.get(type(exc), type(exc).__name__)) from None


def _canonicalization_kind(exc: Exception) -> str:
    text = str(exc)  # rfc8785's own messages; a value never reaches the kind
    if text.startswith("unsupported type"):
        return "UnsupportedType"
    if "keys must be strings" in text:
        return "NonStringKey"
    return "InvalidUnicode"


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether containers nest deeper than ``limit`` (depth first: a cycle is found quickly)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


# ---- the fast path -------------------------------------------------------------------------------
# A type proof is the value written by CPython's C pickler (protocol 3, fast mode) with every
# object it does not write itself refused. Its ``save`` writes ``None``, ``True``, ``False`` and
# objects whose type *is* int, float, str, bytes, bytearray, dict, list or tuple (an identity
# test on the type, so no subclass), walking dicts and lists in C without calling user code;
# every other object is offered to ``reducer_override`` first, which refuses it. Protocol 3 has
# no frames, so one ``dump`` usually makes one ``write``; but a str or bytes payload of 64 KiB or
# more (the pickler's frame target) bypasses its buffer and is written on its own, so a proof is
# the join of every write of its ``dump``, never the first alone. Fast mode keeps no memo, so the
# bytes are the content alone: no back-references, no "interned" bit, nothing that depends on who
# else holds a reference. Each type has its own opcodes (``True`` is ``\x88``, ``1`` is
# ``K\x01``, ``1.0`` and ``-0.0`` are ``G`` and their 8 IEEE bytes), strings are UTF-8
# (``surrogatepass``), and unpickling gives back exactly one value: equal proofs mean equal values
# of equal types, member order included.
# A cycle (found past 50 levels), deep nesting (RecursionError) or a mutation during the walk
# fails the dump: no proof. About 30 % faster than ``marshal`` format 2, which encodes each
# string into a new bytes object (formats 3 and 4 avoid that but write reference flags that
# depend on reference counts).
_PROOF_PROTOCOL: Final = 3


class _ExactTypesOnly(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:  # noqa: ARG002 - the pickler's hook signature
        raise TypeError  # reached only by objects the C pickler does not write itself (above)


class _Sink:
    __slots__ = ("write",)

    def __init__(self, write: Callable[[bytes], object]) -> None:
        self.write = write


def _prover(parts: list[bytes]) -> _ExactTypesOnly:
    pickler = _ExactTypesOnly(_Sink(parts.append), _PROOF_PROTOCOL)
    pickler.fast = True
    return pickler


def type_proof(value: Any) -> bytes | None:
    """Bytes that prove ``value`` holds only exact built-in types and pin its content and types.

    ``None`` when ``value`` has a subclass, a foreign object, a cycle or deep nesting."""
    parts: list[bytes] = []
    try:
        _prover(parts).dump(value)
    except Exception:  # noqa: BLE001 - the refusal, RecursionError, a cycle, a mutation during the walk
        return None
    return parts[0] if len(parts) == 1 else b"".join(parts)


def type_proofs(values: list[Any]) -> list[bytes] | None:
    """:func:`type_proof` of each value in one C loop, or ``None`` if any value has none."""
    parts: list[bytes] = []
    try:
        deque(map(_prover(parts).dump, values), 0)
    except Exception:  # noqa: BLE001 - the refusal, RecursionError, a cycle, a mutation during the walk
        return None
    if len(parts) == len(values):  # every dump writes at least once: here exactly once each
        return parts
    proofs = [type_proof(value) for value in values]  # a large payload was written apart
    return None if None in proofs else cast("list[bytes]", proofs)


#: A non-finite double in a proof: ``G`` then 8 big-endian bytes whose exponent bits are all set,
#: so its first byte is 0x7F or 0xFF and its second at least 0xF0 (two quick ``memchr`` checks
#: come first). Elsewhere the pattern can only match inside string or integer payloads, and a
#: false match only costs the exact path.
_NON_FINITE: Final = re.compile(rb"G[\x7f\xff][\xf0-\xff]")


#: One C pass marks what may need a closer look: ``0`` a digit, ``.`` one of ``.eE`` (so ``0.``
#: starts every float token, and also string content such as ``v1.2``), ``!`` a 4-byte UTF-8 lead
#: (a supplementary character).
def _marks_table() -> bytes:
    table = bytearray(b" " * 256)
    for chars, mark in ((b"0123456789", b"0"), (b".eE", b"."), (bytes(range(0xF0, 0xF5)), b"!")):
        for byte in chars:
            table[byte] = mark[0]
    return bytes(table)


_MARKS: Final = _marks_table()
_DIGIT: Final = ord("0")
_LONG_INT: Final = b"0" * _SAFE_DIGITS
_NUMBER: Final = re.compile(rb"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def _mask(out: bytes) -> bytes:
    """``out`` with escaped backslashes and quotes hidden (same length): every ``"`` left delimits
    a string. JSON escapes never leave raw control bytes, so ``\\x01``/``\\x02`` are free."""
    if b"\\" not in out:
        return out
    return out.replace(b"\\\\", b"\x01\x01").replace(b'\\"', b"\x02\x02")


@functools.lru_cache(maxsize=1024)
def _float_text(token: bytes) -> bytes:
    return rfc8785.dumps(float(token))  # shortest round-trip digits parse back exactly


def _settle(out: bytes, ints_checked: bool) -> bytes:
    """JCS bytes from a C encoder's key-sorted, compact, unescaped UTF-8 output, or :class:`_Defer`.

    ``ints_checked``: the encoder already refused integers outside +/-(2**53 - 1)."""
    marks = out.translate(_MARKS)
    if not ints_checked and _LONG_INT in marks:
        raise _Defer  # a 16-digit run: maybe an unsafe integer (or string content)
    if not out.isascii() and _supplementary_key(out, marks):
        raise _Defer  # UTF-16 order may differ from code-point order
    hit = marks.find(b"0.")
    return out if hit < 0 else _rewrite_floats(out, marks, hit)


def _supplementary_key(out: bytes, marks: bytes) -> bool:
    """Whether a key holds a supplementary character. A 4-byte lead only occurs inside strings;
    the next unescaped quote after it closes that string, and a key's is followed by ``:``."""
    masked = _mask(out)
    lead = marks.find(b"!")
    while lead >= 0:
        close = masked.find(b'"', lead)
        if masked[close + 1 : close + 2] == b":":
            return True
        lead = marks.find(b"!", close)
    return False


def _rewrite_floats(out: bytes, marks: bytes, hit: int) -> bytes:
    """Rewrite each float token outside strings in ECMAScript layout (``rfc8785``'s writer).

    A hit is a digit before ``.eE``; its token starts after the digits (and sign) before it. It
    is outside strings when an even number of unescaped quotes precede it."""
    masked = _mask(out)
    pieces: list[bytes] = []
    done = quotes = counted = 0
    while hit >= 0:
        start = hit
        while start and marks[start - 1] == _DIGIT:
            start -= 1
        if out[start - 1 : start] == b"-":
            start -= 1
        quotes += masked.count(b'"', counted, start)
        counted = start
        match = _NUMBER.match(out, start)
        if quotes % 2 == 0 and match is not None:
            pieces += (out[done:start], _float_text(match[0]))
            done = match.end()
        hit = marks.find(b"0.", max(hit + 1, done))
    pieces.append(out[done:])
    return b"".join(pieces)


def _refuse(value: Any) -> Any:  # noqa: ARG001 - stands in for an encoder: same signature
    raise TypeError


def _load_orjson() -> tuple[Callable[[Any, Any, int], bytes], int] | None:
    """``orjson.dumps`` and its options for JCS, when the optional [fast] extra is importable."""
    try:
        import orjson
    except ImportError:
        return None
    options = (
        orjson.OPT_SORT_KEYS
        | orjson.OPT_STRICT_INTEGER  # +/-(2**53 - 1), as JCS
        | orjson.OPT_PASSTHROUGH_SUBCLASS  # to _refuse (type_proof already excludes them)
        | orjson.OPT_PASSTHROUGH_DATACLASS
        | orjson.OPT_PASSTHROUGH_DATETIME
    )
    return orjson.dumps, options


_ORJSON: Final = _load_orjson()


def _fast_orjson(value: Any, proof: bytes) -> bytes:
    if _ORJSON is None:
        raise _Defer
    dumps, options = _ORJSON
    try:
        out = dumps(value, _refuse, options)
    except TypeError:  # orjson.JSONEncodeError: a refused type or key, a surrogate, deep nesting
        raise _Defer from None
    if (b"\x7f" in proof or b"\xff" in proof) and b"null" in out and _NON_FINITE.search(proof):
        raise _Defer  # NaN and infinities are written as null (see _NON_FINITE)
    return _settle(out, True)


_stdlib_encode: Final = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
).encode


def _fast_stdlib(value: Any, proof: bytes) -> bytes:  # noqa: ARG001 - every fast encoder takes the value and its type proof
    if not _str_keys_only(value):
        raise _Defer
    try:
        out = _stdlib_encode(value).encode("utf-8")
    except (ValueError, TypeError, RecursionError):  # NaN, a refused type, a lone surrogate
        raise _Defer from None
    return _settle(out, False)


def _str_keys_only(value: Any) -> bool:
    """Whether every key is a ``str`` (the standard library's encoder would write ``1`` as
    ``"1"``) and nesting stays within :data:`MAX_DEPTH`. ``value`` holds exact types only."""
    level, depth = [value], 0
    while level:
        if depth > MAX_DEPTH:
            return False
        below: list[Any] = []
        for node in level:
            children = node
            if type(node) is dict:
                try:
                    "".join(node)  # C speed: fails on the first key that is not a str
                except TypeError:
                    return False
                children = node.values()
            below += [child for child in children if type(child) in _CONTAINERS]
        level, depth = below, depth + 1
    return True


_CONTAINERS: Final = (dict, list, tuple)

#: The fast path in use: ``"orjson"`` when importable, else ``"stdlib"``.
ENCODER: Final = "stdlib" if _ORJSON is None else "orjson"
_FAST: Final[dict[str, Callable[[Any, bytes], bytes]]] = {
    "orjson": _fast_orjson,
    "stdlib": _fast_stdlib,
}


def canonicalize(value: Any, proof: bytes | None = None, *, encoder: str = ENCODER) -> bytes:
    """The RFC 8785 bytes of ``value`` (equal to ``rfc8785.dumps(value)``), or :class:`JcsError`.

    ``proof`` is :func:`type_proof` of ``value`` or of a container holding all of it, when the
    caller already has it. ``encoder`` picks the fast path: ``"orjson"``, ``"stdlib"``, or
    ``"exact"`` for ``rfc8785`` alone (benchmarks and tests compare them)."""
    fast = _FAST.get(encoder)
    if fast is not None and type(value) in _CONTAINERS:
        if proof is None:
            proof = type_proof(value)
        if proof is not None:
            try:
                return fast(value, proof)
            except _Defer:
                pass
    return exact(value)
