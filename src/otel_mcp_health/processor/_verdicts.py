"""Verdicts → span attributes, and the read-only copy handed to the exporter (private).

Every key comes from :mod:`otel_mcp_health.attributes` and every value is a vocabulary member or a
short code, never free text. The copy is also the privacy defense in depth of the processor
(docs/model.md#privacy): status descriptions and exception messages never leave it.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import Status, StatusCode

from otel_mcp_health import _sdkspan
from otel_mcp_health import attributes as A
from otel_mcp_health.core.calls import CallResult
from otel_mcp_health.core.catalog import CatalogResult
from otel_mcp_health.core.contract import readiness
from otel_mcp_health.core.progress import ProgressSummary
from otel_mcp_health.core.rules import Decision
from otel_mcp_health.core.vocabulary import FirstFailedLayer, Verdict

if TYPE_CHECKING:  # the sessions import the memo, which writes verdicts
    from otel_mcp_health.processor._sessions import Session

Attributes = Mapping[str, Any]
#: Exception-event members that may be forwarded: the class name and the "escaped" flag. The
#: message and stack trace can quote argument or result values (docs/model.md#privacy) and are
#: dropped.
_SAFE_EXCEPTION_KEYS = frozenset({A.EXCEPTION_TYPE, "exception.escaped"})


# ----------------------------------------------------------------------------------------------
# Results → attributes
# ----------------------------------------------------------------------------------------------
def add_server_name(verdicts: dict[str, Any], attrs: Attributes, server: str | None) -> None:
    """Add to a judged call's verdicts (a dict of its own, never a memoized one) the server's
    name (from its session's handshake) when its span does not carry it, so that span metrics
    group by the exported server label (``server.address``, ``server.port``,
    ``mcp_health.server.name``)."""
    if verdicts and server is not None and A.SERVER_NAME not in attrs:
        verdicts[A.SERVER_NAME] = server


def catalog_and_readiness_attributes(
    result: CatalogResult, handshake: Decision[Verdict] | None = None
) -> dict[str, Any]:
    """What a span that judges the catalog carries (the page that ends a traversal,
    ``list_changed``, ``mcp_health.install``): the catalog verdict, then the session's readiness
    without a call (``mcp_health.readiness.*``): ``handshake``'s verdict when the session's
    handshake was unhealthy (incompatible), else as that catalog decides it."""
    attrs = catalog_verdict_attributes(result)
    ready = readiness(result, handshake)
    attrs[A.READINESS_VERDICT] = ready.verdict.value
    attrs[A.READINESS_REASON] = str(ready.reason)
    attrs[A.READINESS_NEXT_ACTION] = ready.next_action.value
    return attrs


def catalog_verdict_attributes(result: CatalogResult) -> dict[str, Any]:
    """``mcp_health.catalog.*`` verdict attributes of a catalog judgement (a call carries those
    of the catalog it was judged against)."""
    attrs: dict[str, Any] = {
        A.CATALOG_VERDICT: result.verdict.value,
        A.CATALOG_REASON: str(result.reason),
        A.CATALOG_CLIENT_SOURCE: result.client_source.value,
    }
    known = (
        (A.CATALOG_MAX_AGE_S, result.max_age_seconds),
        (A.CATALOG_DIGEST, result.discovered_digest),
        (A.CATALOG_CLIENT_DIGEST, result.client_digest),
    )
    attrs.update((key, value) for key, value in known if value is not None)
    return attrs


def inherited_attributes(session: Session, now: int | None) -> dict[str, Any]:
    """``mcp_health.catalog.inherited`` and the age of the complete discovery, for a call judged
    against its server's lists by another session (docs/model.md#scope); else empty."""
    if not session.inherits:
        return {}
    attrs: dict[str, Any] = {A.CATALOG_INHERITED: True}
    discovery = session.inherited
    if discovery is not None and now is not None and discovery.completed_at is not None:
        attrs[A.CATALOG_INHERITED_AGE_S] = max(0.0, (now - discovery.completed_at) / 1e9)
    return attrs


def _decision_attributes(result: CallResult) -> dict[str, Any]:
    """Verdict, next action, reason and first failed layer."""
    return {
        A.VERDICT: result.verdict.value,
        A.NEXT_ACTION: result.next_action.value,
        A.REASON: str(result.reason),
        A.CALL_FIRST_FAILED_LAYER: result.first_failed_layer.value,
    }


def _add_layers(attrs: dict[str, Any], result: CallResult) -> None:
    for layer, status in result.layers.items():
        attrs[A.layer_attribute(layer.value)] = status.value


def handshake_attributes(result: CallResult) -> dict[str, Any]:
    """What a judged handshake carries: verdict, next action, reason, first failed layer and,
    when it failed at a layer, the five layer statuses the core gives it (passed before that
    layer, failed there, unobserved after: ``core.layers.stopped_at``)."""
    attrs = _decision_attributes(result)
    if result.first_failed_layer is not FirstFailedLayer.NONE:
        _add_layers(attrs, result)
    return attrs


def call_attributes(result: CallResult) -> dict[str, Any]:
    """Verdict, next action, reasons and the five layer statuses of one judged call."""
    attrs = _decision_attributes(result)
    attrs[A.CALL_REASON] = str(result.reason)
    _add_layers(attrs, result)
    if result.effect_unknown:
        attrs[A.EFFECT_UNKNOWN] = True
    return attrs


def progress_attributes(summary: ProgressSummary) -> dict[str, Any]:
    """The progress summary a finished call span carries (docs/model.md#verdicts)."""
    attrs: dict[str, Any] = {
        A.PROGRESS_COUNT: summary.count,
        A.PROGRESS_VALID_COUNT: summary.valid_count,
        A.PROGRESS_MONOTONIC: summary.monotonic,
        A.PROGRESS_LATE_COUNT: summary.late_count,
        A.PROGRESS_WRONG_TOKEN_COUNT: summary.wrong_token_count,
    }
    if summary.max_gap_seconds is not None:
        attrs[A.PROGRESS_MAX_GAP_S] = summary.max_gap_seconds
    return attrs


@functools.lru_cache(maxsize=4096)  # a few keys recur: the digest is computed once per key
def incident_key(service: str, server: str, layer: str, reason: str) -> str:
    """A short, stable, non-reversible key: service + server identity + layer + reason code."""
    material = "\x1f".join((service, server, layer, reason)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(material).hexdigest()[:16]


# ----------------------------------------------------------------------------------------------
# The copy handed to the exporting processor
# ----------------------------------------------------------------------------------------------
def _sanitized_events(events: Sequence[Event]) -> Sequence[Event]:
    if not events or not any(event.name == A.EXCEPTION_EVENT for event in events):
        return events
    cleaned: list[Event] = []
    for event in events:
        if event.name == A.EXCEPTION_EVENT:
            kept = {k: v for k, v in (event.attributes or {}).items() if k in _SAFE_EXCEPTION_KEYS}
            cleaned.append(Event(event.name, kept, event.timestamp))
        else:
            cleaned.append(event)
    return tuple(cleaned)


def _sanitized_status(span: ReadableSpan, attributes: Attributes) -> Status:
    status = span.status
    if status.description is None:
        return status
    error_type = attributes.get(A.ERROR_TYPE)
    description = error_type if isinstance(error_type, str) else None
    return Status(StatusCode.ERROR, description)


def carries_text(span: ReadableSpan) -> bool:
    """Whether the span holds text the copy would sanitize (a status description, an exception
    event with more than the exception class)."""
    if span.status.description is not None:
        return True
    return any(
        event.name == A.EXCEPTION_EVENT
        and any(k not in _SAFE_EXCEPTION_KEYS for k in (event.attributes or {}))
        for event in span.events
    )


def enriched_copy(
    span: ReadableSpan, attributes: Attributes, verdicts: Mapping[str, Any]
) -> ReadableSpan:
    """A read-only copy of a finished MCP span with the verdict attributes merged in.

    ``attributes`` is the span's own attributes as a plain dict (read once by the caller).
    Privacy defense in depth (docs/model.md#privacy): the status description becomes the span's
    sanitized ``error.type`` and exception events keep only the exception class, whatever the SDK
    or another instrumentation wrote there (server error texts can echo argument values).
    """
    events = _sdkspan.events(span)
    status = span.status
    return _sdkspan.copy(
        span,
        attributes={**attributes, **verdicts},
        events=_sanitized_events(events) if events else events,
        links=_sdkspan.links(span),
        status=status if status.description is None else _sanitized_status(span, attributes),
    )
