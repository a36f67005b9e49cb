"""Hooks of one request before its outcome: the span, the contract check, progress, the write.

A hook module (the seam's contract: :data:`._compat.HOOK_MODULES`). Each request starts and
ends here: :func:`finish` folds the facts its hooks saw and writes them once through the codec.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from opentelemetry.trace import Span, SpanKind, Status, StatusCode, get_current_span

from otel_mcp_health import _codec, _sdkspan
from otel_mcp_health import attributes as A
from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.evidence import Page, ProgressEvent
from otel_mcp_health.core.facts import OutputSchema, SdkEntered, SdkExit, WriteStarted
from otel_mcp_health.core.fold import Folded, Records
from otel_mcp_health.instrumentation import _state
from otel_mcp_health.instrumentation._sdk import (
    HANDSHAKE_METHODS,
    HTTP_ONLY_EVIDENCE,
    NOT_HTTP_EVIDENCE,
    failure_of,
    requested_version,
)
from otel_mcp_health.instrumentation._state import (
    RequestRecord,
    SessionState,
    Slot,
    Telemetry,
    cursor_hash,
)

_logger = logging.getLogger(__name__)

#: The SDK's progress callback shape (``mcp.shared.dispatcher.ProgressFnT``).
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
_NAMED_METHODS = {"tools/call", "prompts/get"}


def begin_request(
    telemetry: Telemetry,
    state: SessionState,
    method: str,
    params: Any,
    *,
    opts: Any,
    slot: Slot | None,
) -> RequestRecord:
    """Start the one CLIENT span of a request, with everything known before it is sent."""
    if state.held_probe is not None:
        state.release_probe(superseded=method in HANDSHAKE_METHODS)
    params = params if isinstance(params, Mapping) else {}
    target = params.get("name") if method in _NAMED_METHODS else None
    target = cap(target) if isinstance(target, str) else None  # server-chosen: bounded
    if method == "tools/call" and target is not None:
        start, attrs = _call_attributes(telemetry, state, target, opts, slot)
        origin = None
    else:
        start = state.start_attributes()
        attrs = {A.MCP_METHOD_NAME: method, **start}
        origin = _method_attributes(attrs, method, params=params, target=target)
    if origin == A.ORIGIN_APPLICATION:
        _state.LISTING.set(state)
    span, borrowed = _start_span(telemetry, method, target, attrs)
    record = RequestRecord(
        state=state,
        span=span,
        method=method,
        tool_name=target,
        params=params,
        origin=origin,
        recording=span.is_recording(),
        borrowed=borrowed,
        start_attributes=start,
        span_attributes=attrs,
    )
    return _claimed(record, slot)


def _call_attributes(
    telemetry: Telemetry, state: SessionState, tool: str, opts: Any, slot: Slot | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A ``tools/call``'s session start attributes and span start attributes: the head its
    session built once for the tool and clocks, then what the call's own check found."""
    deadline = opts.get("timeout") if isinstance(opts, Mapping) else None
    deadline = deadline if isinstance(deadline, int | float) else None
    start, head = state.call_start(tool, telemetry.idle_window_s, deadline)
    checked = slot.attributes if slot is not None and slot.method == "tools/call" else None
    return start, {**head, **checked} if checked else dict(head)


def _claimed(record: RequestRecord, slot: Slot | None) -> RequestRecord:
    """The new request's record with what the outer wrapper whose request it is learned before
    it (the tool's ``readOnlyHint``, the evidence its call-time check found missing); a call is
    counted among its session's open calls."""
    if slot is not None and slot.method == record.method:
        record.read_only, record.missing = slot.read_only, slot.missing
    if record.method == "tools/call":
        record.state.open_calls.add(record)
    return record


def _start_span(
    telemetry: Telemetry, method: str, target: str | None, attrs: dict[str, Any]
) -> tuple[Span, bool]:
    """The request's CLIENT span, or an outer library's span for it (``True``: borrowed). Ours
    starts without its attributes and gets them written at once where nothing looks at a span
    while it starts (the same span, without the SDK re-validating them: ``_sdkspan``)."""
    outer = get_current_span()
    if _is_outer_client_span(outer, method):
        outer.set_attributes(attrs)
        return outer, True
    name = f"{method} {target}" if target is not None else method
    tracer, writes = telemetry.tracer, telemetry.start_writes
    if writes is None:
        writes = telemetry.start_writes = _sdkspan.StartWrites(tracer)
    if not writes.holds():
        return tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attrs), False
    span = tracer.start_span(name, kind=SpanKind.CLIENT)
    _sdkspan.write(span, attrs)
    return span, False


def _method_attributes(
    attrs: dict[str, Any], method: str, *, params: Mapping[str, Any], target: str | None
) -> str | None:
    """What each method but a named ``tools/call`` (:meth:`SessionState.call_start`) knows
    before it is sent; returns a ``tools/list`` page's origin."""
    if method == "prompts/get" and target is not None:
        attrs[A.GEN_AI_PROMPT_NAME] = target
    elif method == "tools/list":
        origin = A.ORIGIN_INTERNAL if _state.INTERNAL.get() else A.ORIGIN_APPLICATION
        attrs.update(_codec.encode_origin(origin))
        # Known before the answer, so that a page that fails keeps its place in the chain.
        cursor = params.get("cursor")
        if isinstance(cursor, str):
            attrs.update(_codec.encode_page(Page(cursor=cursor_hash(cursor))))
        else:
            attrs.update(_codec.encode_page_index(0))
        return origin
    elif method in HANDSHAKE_METHODS:
        attrs.update(_codec.encode_era(HANDSHAKE_METHODS[method]))
        requested = requested_version(method, params)
        attrs.update(_codec.encode_versions(requested, None))
    return None


def _is_outer_client_span(span: Any, method: str) -> bool:
    """Is the current span another instrumentation's open CLIENT span for this very request?

    Higher-level clients (FastMCP's ``Client``) trace each MCP request themselves. Semconv says
    not to add a second span then but to put the MCP attributes on the existing one, so the
    request's evidence goes onto that span and it is left for its owner to end.
    """
    if not span.is_recording() or getattr(span, "kind", None) is not SpanKind.CLIENT:
        return False
    attributes = getattr(span, "attributes", None)
    return isinstance(attributes, Mapping) and attributes.get(A.MCP_METHOD_NAME) == method


def progress_tap(record: RequestRecord, callback: ProgressCallback) -> ProgressCallback:
    """Wrap a request's progress callback: one span event per notification, then the callback."""

    async def tap(progress: float, total: float | None, message: str | None) -> None:
        try:
            on_progress(record, progress, total)
        except Exception:  # the host's callback must run whatever happens to our evidence
            _logger.debug("progress evidence failed", exc_info=True)
        await callback(progress, total, message)

    return tap


def on_progress(record: RequestRecord, progress: float, total: float | None) -> None:
    """A ``notifications/progress`` for this request arrived (values only, never the message)."""
    if record.ended or not record.recording:
        return
    event = ProgressEvent(
        at=time.time_ns(), token=_codec.REQUEST_TOKEN, progress=progress, total=total
    )
    name, attrs, at = _codec.encode_progress_event(event)
    record.span.add_event(name, attrs, timestamp=at)


def on_inbound_progress(dispatcher: Any, message: Any, sender_ctx: Any) -> None:
    """A ``notifications/progress`` arrived on a request's own stream (streamable HTTP carries
    the request's context with it) but names another token: inconsistent evidence, recorded
    as such on that request's span (``token_match=False``). Matching tokens are recorded by the
    progress tap; notifications with no request context cannot be attributed and are ignored.
    """
    if getattr(message, "method", None) != "notifications/progress" or sender_ctx is None:
        return
    record = sender_ctx.get(_state.REQUEST)
    params = message.params
    if record is None or record.ended or not record.recording or not isinstance(params, Mapping):
        return
    if _state.DISPATCHERS.get(dispatcher) is not record.state:
        return
    token, progress = params.get("progressToken"), params.get("progress")
    if record.request_id is None or str(token) == record.request_id:
        return
    total = params.get("total")
    attrs = _codec.encode_progress_notification(_number(progress), _number(total), matched=False)
    record.span.add_event(A.PROGRESS_EVENT, attrs)


def _number(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def on_sdk_span(record: RequestRecord, attributes: Mapping[str, Any] | None) -> None:
    """The SDK asked for its client span: this is the request's; learn its JSON-RPC id."""
    record.sdk_span_entered = True
    record.observe(SdkEntered())  # the SDK enters its span block before it writes
    learn_request_id(record, (attributes or {}).get(A.JSONRPC_REQUEST_ID))


def taken_by_session(record: RequestRecord) -> None:
    """mcp 1.x: the session itself writes the request before it waits, and a request it cannot
    write fails with the stream's own error; so a closed connection it reports (``-32000``)
    came after the write, as when the 2.x SDK's span block was entered."""
    record.sdk_span_entered = True
    record.observe(SdkEntered(write_visible=False))


def learn_request_id(record: RequestRecord, request_id: Any) -> None:
    """The request's JSON-RPC id: minted by the wire dispatcher, the in-process peer (2.x) or
    the session (1.x). Kept on the record; a 1.x session also indexes its open requests by it,
    for the transport hooks that run outside the request's context."""
    if record.request_id is not None or not isinstance(request_id, str | int):
        return
    record.request_id = str(request_id)
    if record.state.by_wire_id:
        record.state.wire_requests[record.request_id] = record


def on_write(record: RequestRecord, message: Any) -> None:
    """The dispatcher writes a message in this request's context: is it the request itself?"""
    if getattr(message, "method", None) == record.method and hasattr(message, "id"):
        record.write_seen = True
        record.observe(WriteStarted())


def on_sdk_span_exit(record: RequestRecord, exc: BaseException | None) -> None:
    """The SDK's span block ended, normally or with an exception (what that means: the fold)."""
    record.observe(SdkExit(None if exc is None else failure_of(exc)))


def output_schema_checked(slot: Slot, session: Any, name: Any, exc: BaseException | None) -> None:
    """``validate_tool_result`` returned or raised: valid, invalid, or no schema (absent). It
    runs after the dispatcher returned, while ``call_tool`` still holds the call's record."""
    record = slot.record
    if record is None:
        return
    if exc is not None:
        record.observe(OutputSchema(valid=False))
    elif getattr(session, "_tool_output_schemas", {}).get(name) is not None:
        record.observe(OutputSchema(valid=True))


def _missing_evidence(telemetry: Telemetry, state: SessionState) -> tuple[str, ...]:
    """What the installed SDK cannot give that this session's requests would have had."""
    if not telemetry.missing_evidence:
        return ()
    # Without the HTTP hooks an HTTP session is not recognised: only a known pipe is exempt.
    transport = state.network_transport
    excluded = {"tcp": NOT_HTTP_EVIDENCE, "pipe": HTTP_ONLY_EVIDENCE}.get(transport or "", ())
    return tuple(e for e in telemetry.missing_evidence if e not in excluded)


def finish(telemetry: Telemetry, record: RequestRecord) -> None:
    """End the request's span once, with its records written once, and record its duration."""
    if record.ended:
        return
    record.ended = True
    record.state.open_calls.discard(record)
    missing = _missing_evidence(telemetry, record.state)
    built, request = _ended(record, (*missing, *record.missing) if record.missing else missing)
    if record.recording:
        _write_evidence(record, built, request)
    if _is_fallback_probe(record, built.seen):
        record.state.held_probe = (record, time.time_ns())
    elif not record.borrowed and not record.end_deferred:
        record.span.end()
    _record_duration(telemetry, record, built.seen.error_type)
    if record.on_finished is not None:
        record.on_finished()  # e.g. start the outcome verifier that will end the span


def _is_fallback_probe(record: RequestRecord, seen: Folded) -> bool:
    """A ``server/discover`` answered with an error (JSON-RPC or HTTP): the SDK may fall back to
    ``initialize`` in the same session, so its span waits to learn whether it was superseded."""
    answered = seen.error_code is not None or (seen.http_status or 0) >= 400
    return (
        record.method == "server/discover"
        and answered
        and record.recording
        and not record.borrowed
        and not record.end_deferred
    )


#: A ``tools/call``'s records and request attributes (its id aside) by its shape: a fleet repeats
#: a few shapes, and the fold and the encoders are pure, so a shape's are always the same. Read,
#: never changed; bounded, cleared when full.
_ENDED: dict[tuple[Any, ...], tuple[Records, dict[str, Any]]] = {}
_ENDED_MAX = 1024


def _ended(record: RequestRecord, missing: tuple[str, ...]) -> tuple[Records, dict[str, Any]]:
    """The request's records (its id aside) and its request attributes (with its id)."""
    key = None
    if record.method == "tools/call":
        try:
            key = record.shape(missing)
            hit = _ENDED.get(key)
        except TypeError:  # a fact holding an unhashable value: fold it afresh
            key = hit = None
        if hit is not None:
            return hit[0], {**hit[1], **_codec.encode_request_id(record.request_id)}
    built = record.records(missing, identified=False)
    request = _codec.encode_request(built.request)
    if key is not None:
        if len(_ENDED) >= _ENDED_MAX:
            _ENDED.clear()
        _ENDED[key] = (built, request)
    return built, {**request, **_codec.encode_request_id(record.request_id)}


def _write_evidence(record: RequestRecord, built: Records, request: dict[str, Any]) -> None:
    """The request's records, each through its encoder, in one write: the connection its POST
    learned, the session id its response named, the handshake, the page, the request."""
    seen = built.seen
    attrs = dict(record.post_attributes or {})
    if seen.session_id is not None:
        attrs[A.MCP_SESSION_ID] = seen.session_id
    if seen.handshake is not None and built.handshake is not None:
        # The handshake shares its exchange with the request record and its requested version
        # with the span's start: each is written where it was learned (the span keeps its order).
        handshake = _codec.encode_handshake_result(seen.handshake, built.handshake)
        started = record.span_attributes
        attrs.update(
            (key, value)
            for key, value in handshake.items()
            if key not in request and (key not in started or started[key] != value)
        )
    if built.page is not None:
        attrs.update(_codec.encode_page_result(built.page))
    attrs.update(request)
    span = record.span
    if record.borrowed:
        span.set_attributes(attrs)  # another library's span: its owner's way
    else:
        _sdkspan.write(span, attrs)
    if seen.error_type is not None:
        span.set_status(Status(StatusCode.ERROR))
    # A borrowed span's owner records the exception that leaves its block itself (FastMCP does):
    # a second copy of it would be ours alone (docs/model.md, what the host sees).
    if seen.exception_type is not None and not record.borrowed:
        span.add_event(A.EXCEPTION_EVENT, {A.EXCEPTION_TYPE: seen.exception_type})


def _record_duration(telemetry: Telemetry, record: RequestRecord, error_type: str | None) -> None:
    elapsed = time.perf_counter() - record.started
    tool = record.tool_name if record.method == "tools/call" else None
    labels = record.state.operation_labels(
        telemetry.operation_labels, record.method, tool, error_type
    )
    telemetry.operation_duration.record(elapsed, labels)
