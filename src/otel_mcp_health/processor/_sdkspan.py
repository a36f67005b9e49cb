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
from typing import Any, Final

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan, Span
from opentelemetry.sdk.util import BoundedList
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status


def scope_and_kind(span: ReadableSpan) -> tuple[InstrumentationScope | None, SpanKind]:
    """``(span.instrumentation_scope, span.kind)``: every span that starts or ends is asked, so
    the SDK's own spans' fields are read directly (their properties return exactly these)."""
    if type(span) is ReadableSpan or type(span) is Span:
        return span._instrumentation_scope, span._kind
    return span.instrumentation_scope, span.kind


def context(span: ReadableSpan) -> SpanContext | None:
    """``span.context`` (the SDK's own spans' field read directly)."""
    found: SpanContext | None = (
        span._context if type(span) is ReadableSpan or type(span) is Span else span.context
    )
    return found


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


def _copied_fields() -> frozenset[str] | None:
    """The fields the SDK's ``ReadableSpan`` constructor sets (``None``: copy through it)."""
    fields = getattr(ReadableSpan(name="probe"), "__dict__", None)
    if fields is None or not fields.keys() >= _REPLACED:
        return None
    return frozenset(fields)


#: The fields a copy replaces; ``_instrumentation_info`` (deprecated) is not carried over.
_REPLACED: Final = frozenset(
    {"_attributes", "_events", "_links", "_status", "_instrumentation_info"}
)
_FIELDS: Final = _copied_fields()
_new: Final = object.__new__


def copy(
    span: ReadableSpan,
    *,
    attributes: dict[str, Any],
    events: Sequence[Event],
    links: Sequence[Link],
    status: Status,
) -> ReadableSpan:
    """``span`` with these attributes, events, links and status: exactly what
    ``ReadableSpan(name=span.name, context=span.context, ..., instrumentation_scope=...)`` makes,
    without its keyword-argument call. A finished SDK span's fields are copied as one dict (one
    C call) when they are exactly those the constructor sets; any other span goes through it."""
    fields = getattr(span, "__dict__", None) if type(span) is ReadableSpan else None
    if fields is not None and fields.keys() == _FIELDS:
        copied: ReadableSpan = _new(ReadableSpan)
        values = fields.copy()
        values["_attributes"] = attributes
        values["_events"] = events
        values["_links"] = links
        values["_status"] = status
        values["_instrumentation_info"] = None
        copied.__dict__ = values
        return copied
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=events,
        links=links,
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
