"""The SDK span's private fields, read and written in this one module (private; shared by the
processor and the instrumentation; docs/performance.md).

Reads. The SDK's ``ReadableSpan`` hands out its attributes through ``BoundedAttributes`` (every
lookup and every copy Python-level) and its events and links as a fresh tuple built by iterating a
locked ``BoundedList``. On the processor's hot path these reads cost more than judging a memoized
call. A finished SDK span is immutable (its attributes are frozen by ``end()``, nothing is
appended to its lists afterwards), so its inner containers are read in place here; any other
span, or an SDK whose internals differ, is read through the public properties.

Writes. The instrumentation's attribute values are already bounded plain types, so the SDK's
per-value validation is work without effect on them. :func:`write` puts them into an open SDK
span's attribute store exactly as ``set_attributes`` would (same keys, values, value types and
order) when nothing can differ; anything else goes through ``set_attributes``. A span may start
without its attributes and get them written at once only where no one looks at them in between
(:class:`StartWrites`).
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SynchronousMultiSpanProcessor
from opentelemetry.sdk.trace import sampling as sdk_sampling
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
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


# ----------------------------------------------------------------------------------------------
# Writes
# ----------------------------------------------------------------------------------------------
#: The SDK's span classes (``Tracer.start_span`` makes ``_Span``).
_SPANS: Final = frozenset({Span, getattr(sdk_trace, "_Span", Span)})
#: Attribute value types the SDK stores unchanged (a tuple of one of them too).
_PLAIN: Final = frozenset({str, bool, int, float})
_KEYS: Final = frozenset({str})
#: The SDK's samplers that never read a span's attributes (they only pass them through), by exact
#: type: a subclass may override ``should_sample``. ``ParentBased`` is blind when its delegates are.
_BLIND_SAMPLERS: Final = frozenset(
    getattr(sdk_sampling, name)
    for name in ("StaticSampler", "TraceIdRatioBased", "_AlwaysOn", "_AlwaysOff")
    if hasattr(sdk_sampling, name)
)
_PARENT_BASED: Final = frozenset(
    getattr(sdk_sampling, name)
    for name in (
        "ParentBased",
        "ParentBasedTraceIdRatio",
        "_ParentBasedAlwaysOn",
        "_ParentBasedAlwaysOff",
    )
    if hasattr(sdk_sampling, name)
)
_DELEGATES: Final = (
    "_root",
    "_remote_parent_sampled",
    "_remote_parent_not_sampled",
    "_local_parent_sampled",
    "_local_parent_not_sampled",
)
#: The SDK's span processors whose ``on_start`` does nothing, by exact type.
_BLIND_PROCESSORS: Final = frozenset({SimpleSpanProcessor, BatchSpanProcessor})
#: Span processors that hand spans on to processors of their own, by exact type, with how to
#: read those: such a processor is blind when its ``on_start`` never reads a span's attributes
#: (its registrant vouches for that) and every processor it owns is blind too.
OWNERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _blind_sampler(sampler: object, depth: int = 0) -> bool:
    kind = type(sampler)
    if kind in _BLIND_SAMPLERS:
        return True
    if kind not in _PARENT_BASED or depth > 4:
        return False
    return all(_blind_sampler(getattr(sampler, name, None), depth + 1) for name in _DELEGATES)


_Read = Callable[[Any], Any]
#: A processor that owns others, how to read the tuple of those, and the tuple read.
_Watched = tuple[Any, _Read, tuple[Any, ...]]
_OWNED_BY_SDK: Final = operator.attrgetter("_span_processors")


def _processors(tracer: object) -> tuple[list[Any], list[_Watched]] | None:
    """Every span processor the tracer's spans reach, and each processor that owns others with
    the tuple of those (``None``: a chain this module cannot see through)."""
    leaves: list[Any] = []
    watched: list[_Watched] = []
    pending = [getattr(tracer, "span_processor", None)]
    while pending:
        processor = pending.pop()
        kind = type(processor)
        read = _OWNED_BY_SDK if kind is SynchronousMultiSpanProcessor else OWNERS.get(kind)
        if read is None:
            leaves.append(processor)
            continue
        owned = read(processor)
        if type(owned) is not tuple or len(watched) > 16:
            return None
        watched.append((processor, read, owned))
        pending.extend(owned)
    return leaves, watched


class StartWrites:
    """Whether a tracer's spans may start without attributes and get them written right after.

    True when nothing can look at a span's attributes while it starts: the tracer is the SDK's,
    its sampler one of the SDK's attribute-blind ones, every span processor it reaches blind in
    ``on_start``, and its span limits never shorten a value. Decided once; only the processor
    chain can change afterwards (``add_span_processor``, an owner's new downstream processor),
    and each change replaces a tuple, so :meth:`holds` checks that the tuples it saw are still
    in place and decides again when one was replaced.
    """

    __slots__ = ("_decided", "_tracer")

    def __init__(self, tracer: object) -> None:
        self._tracer = tracer
        #: What was watched and what was decided, replaced as one (threads may ask meanwhile).
        self._decided: tuple[tuple[_Watched, ...], bool] = ((), False)
        self._decide()

    def _decide(self) -> None:
        tracer = self._tracer
        chain = _processors(tracer) if type(tracer) is sdk_trace.Tracer else None
        if chain is None:
            self._decided = ((), False)
            return
        leaves, watched = chain
        limits = getattr(tracer, "_span_limits", None)
        safe = (
            _blind_sampler(getattr(tracer, "sampler", None))
            and getattr(limits, "max_span_attribute_length", 0) is None
            and all(type(p) in _BLIND_PROCESSORS for p in leaves)
        )
        self._decided = (tuple(watched), safe)

    def holds(self) -> bool:
        """Whether a span of the tracer may start without its attributes now."""
        watched, safe = self._decided
        for holder, read, seen in watched:
            if read(holder) is not seen:
                self._decide()
                return self._decided[1]
        return safe


def _plain(attributes: Mapping[str, Any]) -> bool:
    """Every key a non-empty ``str``, every value one the SDK stores as it is."""
    if not _PLAIN.issuperset(map(type, attributes.values())):
        for value in attributes.values():
            if type(value) in _PLAIN:
                continue
            if type(value) is not tuple:
                return False
            kinds = set(map(type, value))
            if len(kinds) > 1 or not _PLAIN.issuperset(kinds):
                return False
    return _KEYS.issuperset(map(type, attributes)) and "" not in attributes


def write(span: Any, attributes: Mapping[str, Any]) -> None:
    """``span.set_attributes(attributes)``; written into an open SDK span's store directly when
    that stores exactly the same: no value-length limit, room for every key under the count
    limit (the SDK would drop the oldest), every value plain."""
    if type(span) in _SPANS:
        bounded = getattr(span, "_attributes", None)
        if (
            type(bounded) is BoundedAttributes
            and bounded.max_value_len is None
            and (bounded.maxlen is None or len(bounded) + len(attributes) <= bounded.maxlen)
            and _plain(attributes)
        ):
            with span._lock, bounded._lock:
                # As ``set_attributes``: an ended span takes nothing (the SDK logs it).
                if span._end_time is None and not bounded._immutable:
                    _store(bounded._dict, attributes)
                    return
    span.set_attributes(attributes)


def _store(inner: dict[str, Any], attributes: Mapping[str, Any]) -> None:
    """As ``BoundedAttributes`` does: a key written again moves to the end."""
    if inner.keys().isdisjoint(attributes):
        inner.update(attributes)
        return
    for key, value in attributes.items():
        inner.pop(key, None)
        inner[key] = value
