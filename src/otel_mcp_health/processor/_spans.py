"""Recognising our spans and reading their identity (private; evidence: :mod:`._codec`).

The span-level helpers of the processor: which finished spans carry our evidence, their session
key and method, and the server identity a session's metrics are labelled with. The evidence
itself is decoded by :mod:`._codec`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from otel_mcp_health import attributes as A
from otel_mcp_health._codec import decode_connection, decode_origin
from otel_mcp_health._codec._read import Attributes, read_str
from otel_mcp_health.core.bounds import cap
from otel_mcp_health.processor import _sdkspan

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


@dataclass(frozen=True, slots=True)
class ServerId:
    """The server a span belongs to (docs/model.md#scope): the one identity the processor keys
    incidents and retry budgets by, and labels metrics with.

    ``key`` stays in the process: the instrumentation's keyed hash of the transport target
    (``mcp_health.server.target_key``: the URL with its path and query, the stdio command line,
    environment and working directory, or the in-process server object), so two gateway paths
    on one host and port never share an incident; without it, the label. ``labels`` is all that
    is exported: ``server.address``, ``server.port`` and the handshake's server name.
    """

    key: str
    labels: tuple[tuple[str, Any], ...]

    @property
    def name(self) -> str | None:
        """The server name from the handshake, if known."""
        return next((v for k, v in self.labels if k == A.SERVER_NAME), None)

    def label_attributes(self) -> dict[str, Any]:
        """The exported label as metric attributes (``mcp_health.server.name = unknown`` when
        the spans named nothing)."""
        return dict(self.labels) if self.labels else {A.SERVER_NAME: UNKNOWN_SERVER}


UNKNOWN_SERVER: Final = "unknown"


def server_identity(attrs: Attributes, known: ServerId | None) -> ServerId | None:
    """The server of a span of a session whose server is ``known`` so far: what the span names
    (target key, address, port, server name) completes what earlier spans of the session named
    (the name comes with the handshake)."""
    connection = decode_connection(attrs)
    found: dict[str, Any] = dict(known.labels) if known is not None else {}
    if connection.server_address is not None:
        found[A.SERVER_ADDRESS] = cap(connection.server_address)
    if connection.server_port is not None:
        found[A.SERVER_PORT] = connection.server_port
    name = read_str(attrs, A.SERVER_NAME)
    if name is not None:
        found[A.SERVER_NAME] = cap(name)
    target = read_str(attrs, A.SERVER_TARGET_KEY)
    if target is not None:
        key = "target\x00" + target
    elif known is not None and known.key.startswith("target\x00"):
        key = known.key
    elif A.SERVER_ADDRESS in found:
        port = found.get(A.SERVER_PORT)
        address = found[A.SERVER_ADDRESS]
        key = "label\x00" + (f"{address}:{port}" if port is not None else address)
    elif A.SERVER_NAME in found:
        key = "label\x00" + found[A.SERVER_NAME]
    else:
        return known
    labels = tuple((k, found[k]) for k in _LABELS if k in found)
    return ServerId(key, labels)


#: The exported server label, in this order.
_LABELS: Final = (A.SERVER_ADDRESS, A.SERVER_PORT, A.SERVER_NAME)
