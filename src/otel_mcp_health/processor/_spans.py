"""Recognising our spans and reading their identity (private; evidence: :mod:`._codec`).

The span-level helpers of the processor: which finished spans carry our evidence, their session
key and method. The evidence itself, and the server a span names, are decoded by
:mod:`._codec`.
"""

from __future__ import annotations

from typing import Final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from otel_mcp_health import _sdkspan
from otel_mcp_health import attributes as A
from otel_mcp_health._codec import Attributes, decode_origin, read_str

# ----------------------------------------------------------------------------------------------
# Recognising our spans
# ----------------------------------------------------------------------------------------------
#: The instrumentation scope of every span the instrumentation records (its tracer's name).
INSTRUMENTATION_SCOPE = "otel_mcp_health.instrumentation"


_CLIENT = SpanKind.CLIENT
#: What :func:`recognise` makes of a span.
OTHER: Final = 0
OURS: Final = 1
CLIENT: Final = 2


def recognise(span: ReadableSpan) -> int:
    """:data:`OURS` for a span our instrumentation records (by scope: one read, one compare, the
    whole cost of most non-MCP spans), :data:`CLIENT` for another library's CLIENT span (the
    instrumentation may enrich it instead of adding a second one: FastMCP's ``Client``,
    frameworks that trace MCP themselves), :data:`OTHER` for anything else. Asked of every span
    that starts and every span that ends, so the SDK's own are read in place (:mod:`._sdkspan`).
    """
    scope, kind = _sdkspan.scope_and_kind(span)
    if scope is not None and scope.name == INSTRUMENTATION_SCOPE:
        return OURS
    return CLIENT if kind is _CLIENT else OTHER


def evidence(span: ReadableSpan) -> Attributes | None:
    """The attributes (read in place, never modify them) of a finished span that carries our
    evidence, whichever library created it; ``None`` for any other span.

    Ours (:func:`recognise`), or another library's CLIENT span that the instrumentation
    enriched: it carries our session key.
    """
    recognised = recognise(span)
    if recognised == OURS:
        return _sdkspan.attributes(span)
    if recognised != CLIENT:
        return None
    attrs = _sdkspan.attributes(span)
    return attrs if A.SESSION_KEY in attrs else None


def session_key(attrs: Attributes) -> str | None:
    """The session key an MCP span carries (``mcp_health.session.key``)."""
    value = attrs.get(A.SESSION_KEY)
    return value if isinstance(value, str) else None


def method(attrs: Attributes) -> str | None:
    """``mcp.method.name``."""
    return read_str(attrs, A.MCP_METHOD_NAME)


def is_application_page(attrs: Attributes) -> bool:
    """A ``tools/list`` page the application asked for (internal SDK lists never count)."""
    return decode_origin(attrs) != A.ORIGIN_INTERNAL
