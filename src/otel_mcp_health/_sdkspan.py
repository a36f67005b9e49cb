"""Fast reads of a finished SDK span (private; docs/performance.md#the-exported-copy).

The SDK's ``ReadableSpan`` hands out its attributes through ``BoundedAttributes`` (every lookup and
every copy Python-level) and its events and links as a fresh tuple built by iterating a locked
``BoundedList``. On the processor's hot path these reads cost more than judging a memoized call.
A finished SDK span is immutable (its attributes are frozen by ``end()``, nothing is appended to
its lists afterwards), so its inner containers are read in place here; any other span, or an SDK
whose internals differ, is read through the public properties. Nothing is ever written.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util import BoundedList
from opentelemetry.trace import Link


def attributes(span: ReadableSpan) -> Mapping[str, Any]:
    """The span's attributes as a plain mapping (read-only: never modify it)."""
    bounded = getattr(span, "_attributes", None)
    if type(bounded) is BoundedAttributes and getattr(bounded, "_immutable", False) is True:
        inner = getattr(bounded, "_dict", None)
        if type(inner) is dict:
            return inner
    return dict(span.attributes or {})


def open_attributes(span: ReadableSpan) -> Mapping[str, Any]:
    """The attributes of a span that may still be open, for single-key reads only (never iterate
    or modify it: the span's owner may be adding attributes). An SDK span's inner dict is read in
    place (one ``get`` is atomic); any other span's through its public property."""
    bounded = getattr(span, "_attributes", None)
    if type(bounded) is BoundedAttributes:
        inner = getattr(bounded, "_dict", None)
        if type(inner) is dict:
            return inner
    return span.attributes or {}


def events(span: ReadableSpan) -> Sequence[Event]:
    """``span.events``."""
    found = _items(getattr(span, "_events", None))
    return span.events if found is None else found


def links(span: ReadableSpan) -> Sequence[Link]:
    """``span.links``."""
    found = _items(getattr(span, "_links", None))
    return span.links if found is None else found


def _items(held: object) -> tuple[Any, ...] | None:
    """The items of a ``BoundedList`` or tuple as a tuple; ``None`` for anything else (the caller
    then uses the public property)."""
    if type(held) is tuple:
        return held
    if type(held) is BoundedList:
        inner = getattr(held, "_dq", None)
        if type(inner) is deque:
            return tuple(inner)
    return None
