"""Evidence extraction: every piece of our own logic that a hook runs (private).

This module is the single seam between the host's call path and our code. The wrappers in
:mod:`._wrappers` and :mod:`._http` do nothing but call the library and, inside separate
``try/except Exception`` fences, the functions here (always through the module attribute, so a test
can replace every one of them with a function that raises and prove the host sees no difference).

Nothing here ever reads argument values, result text, headers other than ``WWW-Authenticate``'s
``error``/``scope`` parameters, or exception messages: classification uses exception *types*,
JSON-RPC codes and HTTP status codes only (SPEC §2).
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import ssl
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.trace import SpanKind, Status, StatusCode, get_current_span

from otel_mcp_health import attributes as A
from otel_mcp_health.core.bounds import cap, cap_names
from otel_mcp_health.core.digest import (
    REASON_TOOL_NOT_AN_OBJECT,
    REASON_UNREPRESENTABLE,
    DigestError,
    digest_tools,
)
from otel_mcp_health.core.traversal import CursorChain
from otel_mcp_health.core.vocabulary import (
    DIGEST_PROJECTION,
    AuthError,
    ClientSource,
    Era,
    TransportOutcome,
)
from otel_mcp_health.instrumentation import _state
from otel_mcp_health.instrumentation._state import (
    KnownTool,
    RequestRecord,
    SessionState,
    Slot,
    Telemetry,
    Traversal,
    cursor_hash,
)

_logger = logging.getLogger(__name__)

#: The SDK's progress callback shape (``mcp.shared.dispatcher.ProgressFnT``).
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]

# JSON-RPC codes the SDK synthesizes itself (never on the wire): mcp_types.jsonrpc.
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001
_SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
_PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
_HANDSHAKE_METHODS = {"initialize": Era.INITIALIZE, "server/discover": Era.DISCOVER}
_NAMED_METHODS = {"tools/call", "prompts/get"}
_DEFAULT_PORTS = {"http": 80, "https": 443}
# RFC 6750 §3: auth-param values; we keep only ``error`` (a known code) and ``scope`` names.
_AUTH_PARAM = r'(?:^|[\s,]){name}\s*=\s*(?:"([^"]*)"|([^\s,"]+))'
_AUTH_ERROR_RE = re.compile(_AUTH_PARAM.format(name="error"), re.IGNORECASE)
_AUTH_SCOPE_RE = re.compile(_AUTH_PARAM.format(name="scope"), re.IGNORECASE)
_SCOPE_TOKEN_RE = re.compile(r"^[\x21\x23-\x5B\x5D-\x7E]{1,64}$")  # RFC 6749 scope-token
_MAX_SCOPES = 16


# ----------------------------------------------------------------------------------------------
# Sessions
# ----------------------------------------------------------------------------------------------
def register_session(session: Any) -> None:
    """Give a new ``ClientSession`` its state (random key) and learn a stdio transport."""
    state = SessionState(session_ref=weakref.ref(session))
    dispatcher = session._dispatcher
    _state.SESSIONS[session] = state
    _state.DISPATCHERS[dispatcher] = state
    if _state.STDIO_SPAWNED.get():
        from anyio.streams.memory import MemoryObjectSendStream

        if type(getattr(dispatcher, "_write_stream", None)) is MemoryObjectSendStream:
            state.network_transport = "pipe"


def stdio_spawned() -> None:
    """``stdio_client`` started a server process in the current context (see ``STDIO_SPAWNED``)."""
    _state.STDIO_SPAWNED.set(True)


def session_started(session: Any) -> None:
    """``ClientSession.__aenter__`` ran: the session clock starts."""
    state = _state.SESSIONS.get(session)
    if state is not None:
        state.started_ns = time.perf_counter_ns()


def session_ended(telemetry: Telemetry, session: Any, exc: BaseException | None) -> None:
    """``ClientSession.__aexit__`` ran: record ``mcp.client.session.duration``."""
    state = _state.SESSIONS.get(session)
    if state is None or state.started_ns is None:
        return
    elapsed = (time.perf_counter_ns() - state.started_ns) / 1e9
    state.started_ns = None
    attrs = _connection_attributes(state)
    if exc is not None:
        attrs[A.ERROR_TYPE] = _error_type_of(_leaf(exc))
    telemetry.session_duration.record(elapsed, telemetry.session_labels.apply(attrs))
    # Tells the span processor to release this session's state now, not at idle expiry.
    end = {A.SESSION_KEY: state.key}
    telemetry.tracer.start_span(
        A.SESSION_END_SPAN_NAME, kind=SpanKind.INTERNAL, attributes=end
    ).end()


def _connection_attributes(state: SessionState) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    version = state.current_protocol_version()
    if version is not None:
        attrs[A.MCP_PROTOCOL_VERSION] = version
    if state.network_transport is not None:
        attrs[A.NETWORK_TRANSPORT] = state.network_transport
    if state.server_address is not None:
        attrs[A.SERVER_ADDRESS] = state.server_address
    if state.server_port is not None:
        attrs[A.SERVER_PORT] = state.server_port
    return attrs


# ----------------------------------------------------------------------------------------------
# Requests: start
# ----------------------------------------------------------------------------------------------
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
    params = params if isinstance(params, Mapping) else {}
    target = params.get("name") if method in _NAMED_METHODS else None
    target = cap(target) if isinstance(target, str) else None  # server-chosen: bounded
    name = f"{method} {target}" if target is not None else method
    attrs: dict[str, Any] = {A.MCP_METHOD_NAME: method, A.SESSION_KEY: state.key}
    attrs.update(_connection_attributes(state))
    if state.network_transport == "tcp":
        attrs[A.NETWORK_PROTOCOL_NAME] = "http"
    if state.session_id is not None:
        attrs[A.MCP_SESSION_ID] = state.session_id
    deadline = opts.get("timeout") if isinstance(opts, Mapping) else None
    deadline_s = float(deadline) if isinstance(deadline, int | float) else None
    origin = None
    if method == "tools/call" and target is not None:
        attrs[A.GEN_AI_TOOL_NAME] = target
        attrs[A.GEN_AI_OPERATION_NAME] = A.GEN_AI_OPERATION_EXECUTE_TOOL
        attrs[A.CALL_IDLE_WINDOW_S] = telemetry.idle_window_s
        if deadline_s is not None:
            attrs[A.CALL_DEADLINE_S] = deadline_s
        if slot is not None and slot.method == method:
            attrs.update(slot.attributes)
    elif method == "prompts/get" and target is not None:
        attrs[A.GEN_AI_PROMPT_NAME] = target
    elif method == "tools/list":
        origin = A.ORIGIN_INTERNAL if _state.INTERNAL.get() else A.ORIGIN_APPLICATION
        attrs[A.EVIDENCE_ORIGIN] = origin
        # Known before the answer, so that a page that fails keeps its place in the chain.
        cursor = params.get("cursor")
        if isinstance(cursor, str):
            attrs[A.CATALOG_PAGE_CURSOR_HASH] = cursor_hash(cursor)
        else:
            attrs[A.CATALOG_PAGE_INDEX] = 0
    elif method in _HANDSHAKE_METHODS:
        attrs[A.SESSION_ERA] = _HANDSHAKE_METHODS[method].value
        requested = _requested_version(method, params)
        if requested is not None:
            attrs[A.SESSION_REQUESTED_VERSION] = requested
    outer = get_current_span()
    borrowed = _is_outer_client_span(outer, method)
    if borrowed:
        outer.set_attributes(attrs)
        span = outer
    else:
        span = telemetry.tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attrs)
    record = RequestRecord(
        state=state,
        method=method,
        span=span,
        params=params,
        tool_name=target,
        origin=origin,
        recording=span.is_recording(),
        borrowed=borrowed,
    )
    if method == "tools/call":
        state.open_calls.add(record)
    return record


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


def _requested_version(method: str, params: Mapping[str, Any]) -> str | None:
    if method == "initialize":
        version = params.get("protocolVersion")
    else:
        meta = params.get("_meta")
        version = meta.get(_PROTOCOL_VERSION_META_KEY) if isinstance(meta, Mapping) else None
    return version if isinstance(version, str) else None


def before_call(state: SessionState, slot: Slot, name: Any, arguments: Any) -> None:
    """Call-time contract check (SPEC §3 rule 5) against the last complete discovery.

    Only the tool name and the *names* of the arguments are looked at; the fact and the missing
    property names go on the span, argument values never leave this function.
    """
    known = state.known_tools
    if known is None or not isinstance(name, str):
        return
    tool = known.get(name)
    if tool is None:
        slot.attributes[A.CALL_CONTRACT] = A.CONTRACT_UNKNOWN_TOOL
        return
    if tool.read_only is not None:
        slot.attributes[A.TOOL_READ_ONLY] = tool.read_only
    given = set(arguments) if isinstance(arguments, Mapping) else set()
    missing = sorted(tool.required - given)
    if missing:
        slot.attributes[A.CALL_CONTRACT] = A.CONTRACT_MISSING_REQUIRED_ARGUMENT
        slot.attributes[A.CALL_MISSING_ARGUMENTS] = cap_names(missing)
    else:
        slot.attributes[A.CALL_CONTRACT] = A.CONTRACT_OK


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
    attrs: dict[str, Any] = {A.PROGRESS_VALUE: float(progress), A.PROGRESS_TOKEN_MATCH: True}
    if total is not None:
        attrs[A.PROGRESS_TOTAL] = float(total)
    record.span.add_event(A.PROGRESS_EVENT, attrs)


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
    attrs: dict[str, Any] = {A.PROGRESS_TOKEN_MATCH: False}
    if isinstance(progress, int | float) and not isinstance(progress, bool):
        attrs[A.PROGRESS_VALUE] = float(progress)
    total = params.get("total")
    if isinstance(total, int | float) and not isinstance(total, bool):
        attrs[A.PROGRESS_TOTAL] = float(total)
    record.span.add_event(A.PROGRESS_EVENT, attrs)


def on_sdk_span(record: RequestRecord, attributes: Mapping[str, Any] | None) -> None:
    """The SDK asked for its client span: this is the request's; learn its JSON-RPC id."""
    record.sdk_span_entered = True
    if record.write_started is None:
        record.write_started = False  # the SDK enters its span block before it writes
    request_id = (attributes or {}).get(A.JSONRPC_REQUEST_ID)
    if isinstance(request_id, str):
        record.request_id = request_id
        if record.recording:
            record.span.set_attribute(A.JSONRPC_REQUEST_ID, request_id)


def on_write(record: RequestRecord, message: Any) -> None:
    """The dispatcher writes a message in this request's context: is it the request itself?"""
    if (
        record.write_started is False
        and getattr(message, "method", None) == record.method
        and hasattr(message, "id")
    ):
        record.write_started = True


def on_sdk_span_exit(record: RequestRecord, exc: BaseException | None) -> None:
    """The SDK's span block ended. Normal exit means the write succeeded and an outcome arrived.

    An ``MCPError`` raised *inside* the block is the write failing on a torn-down transport.
    """
    if exc is None:
        if record.written is None:
            record.written = True
    elif _mcp_code(exc) == _CONNECTION_CLOSED:
        record.written = False


# ----------------------------------------------------------------------------------------------
# Requests: outcome
# ----------------------------------------------------------------------------------------------
def on_result(telemetry: Telemetry, record: RequestRecord, result: Any) -> None:
    """The dispatcher returned a result envelope (raw wire dict)."""
    record.answered = True
    if record.written is None:
        record.written = True
    if record.transport_outcome is None:
        record.transport_outcome = TransportOutcome.OK.value
    if not isinstance(result, Mapping):
        return
    if record.method in _HANDSHAKE_METHODS:
        _handshake_result(record, result)
    if not record.recording:
        return
    if record.method == "tools/list":
        _page_result(telemetry, record, result)
    elif record.method == "tools/call" and ("content" in result or "isError" in result):
        is_error = result.get("isError") is True
        record.span.set_attribute(A.CALL_IS_ERROR, is_error)
        if is_error:
            record.error_type = A.ERROR_TYPE_TOOL_ERROR


def _handshake_result(record: RequestRecord, result: Mapping[str, Any]) -> None:
    state = record.state
    attrs: dict[str, Any] = {}
    if record.method == "initialize":
        negotiated = result.get("protocolVersion")
        info = result.get("serverInfo")
    else:
        requested = _requested_version(record.method, record.params)
        supported = result.get("supportedVersions")
        negotiated = requested if isinstance(supported, list) and requested in supported else None
        meta = result.get("_meta")
        info = meta.get(_SERVER_INFO_META_KEY) if isinstance(meta, Mapping) else None
    if isinstance(negotiated, str):
        negotiated = cap(negotiated)
        state.protocol_version = negotiated
        attrs[A.MCP_PROTOCOL_VERSION] = negotiated
    capabilities = result.get("capabilities")
    tools = capabilities.get("tools") if isinstance(capabilities, Mapping) else None
    attrs[A.SESSION_CAPABILITY_TOOLS] = isinstance(tools, Mapping)
    attrs[A.SESSION_CAPABILITY_TOOLS_LIST_CHANGED] = (
        isinstance(tools, Mapping) and tools.get("listChanged") is True
    )
    if isinstance(info, Mapping):
        if isinstance(info.get("name"), str):
            state.server_name = attrs[A.SERVER_NAME] = cap(info["name"])
        if isinstance(info.get("version"), str):
            state.server_version = attrs[A.SERVER_VERSION] = cap(info["version"])
    if record.recording:
        record.span.set_attributes(attrs)


def _page_result(telemetry: Telemetry, record: RequestRecord, result: Mapping[str, Any]) -> None:
    """One ``tools/list`` page: chain facts, counts and digests; a completed traversal's digest."""
    state = record.state
    cursor = record.params.get("cursor")
    cursor = cursor if isinstance(cursor, str) else None
    next_cursor = result.get("nextCursor")
    next_cursor = next_cursor if isinstance(next_cursor, str) else None
    raw_tools = result.get("tools")
    tools = [t for t in raw_tools if isinstance(t, Mapping)] if isinstance(raw_tools, list) else []
    attrs: dict[str, Any] = {A.CATALOG_PAGE_TOOL_COUNT: len(tools)}
    cursor_h = cursor_hash(cursor) if cursor is not None else None
    if cursor_h is not None:
        attrs[A.CATALOG_PAGE_CURSOR_HASH] = cursor_h
    next_hash = cursor_hash(next_cursor) if next_cursor is not None else None
    if next_hash is not None:
        attrs[A.CATALOG_PAGE_NEXT_CURSOR_HASH] = next_hash
    if telemetry.digests:
        _set_digest(attrs, A.CATALOG_PAGE_DIGEST, tools)
    if record.origin == A.ORIGIN_INTERNAL:
        if cursor is None:
            attrs[A.CATALOG_PAGE_INDEX] = 0
        record.span.set_attributes(attrs)
        return
    traversal = state.traversal
    if cursor_h is None:
        traversal = state.traversal = Traversal(CursorChain(telemetry.max_pages))
    elif traversal is None:
        # A cursor with no first page before it: at least one page was not seen (a gap).
        traversal = state.traversal = Traversal(CursorChain.joined_midway(telemetry.max_pages))
    attrs[A.CATALOG_PAGE_INDEX] = traversal.chain.pages
    traversal.chain.add(cursor_h, next_hash)
    if not traversal.chain.intact:
        traversal.tools.clear()  # a broken or over-long chain has no catalog digest
    else:
        traversal.tools.extend(dict(t) for t in tools)
    if next_cursor is None:
        state.traversal = None
        if traversal.chain.intact:
            attrs[A.CATALOG_TOOL_COUNT] = len(traversal.tools)
            if telemetry.digests:
                attrs[A.CATALOG_DIGEST_PROJECTION] = DIGEST_PROJECTION
                _set_digest(attrs, A.CATALOG_DIGEST, traversal.tools)
            state.known_tools = {
                tool["name"]: _known_tool(tool)
                for tool in traversal.tools
                if isinstance(tool.get("name"), str)
            }
    record.span.set_attributes(attrs)


def _set_digest(attrs: dict[str, Any], key: str, tools: Sequence[Mapping[str, Any]]) -> None:
    try:
        attrs[key] = digest_tools(tools)
    except DigestError as exc:
        attrs[A.CATALOG_DIGEST_ERROR] = exc.reason
    except (RecursionError, MemoryError, TypeError, ValueError):
        attrs[A.CATALOG_DIGEST_ERROR] = REASON_UNREPRESENTABLE  # never a digest of a guess


def _known_tool(tool: Mapping[str, Any]) -> KnownTool:
    schema = tool.get("inputSchema")
    required = schema.get("required") if isinstance(schema, Mapping) else None
    names = (
        frozenset(r for r in required if isinstance(r, str))
        if isinstance(required, list)
        else frozenset()
    )
    annotations = tool.get("annotations")
    hint = annotations.get("readOnlyHint") if isinstance(annotations, Mapping) else None
    return KnownTool(required=names, read_only=hint if isinstance(hint, bool) else None)


def on_error(record: RequestRecord, exc: BaseException) -> None:
    """An exception left one of the request's layers; classify it by type and code only.

    Several nested layers may see the same exception; the first classification wins.
    """
    if record.error_type is not None:
        return
    record.exception_type = type(exc).__qualname__
    code = _mcp_code(exc)
    attrs: dict[str, Any] = {}
    if code is not None and code != _CONNECTION_CLOSED:
        record.answered = code != _REQUEST_TIMEOUT
    if code == _REQUEST_TIMEOUT:
        record.timed_out = True
        attrs[A.CALL_TIMED_OUT] = True
        record.written = True if record.written is None else record.written
        if record.transport_outcome is None:  # delivered; only the answer did not come in time
            record.transport_outcome = TransportOutcome.OK.value
        record.error_type = A.ERROR_TYPE_TIMEOUT
    elif code == _CONNECTION_CLOSED:
        if not record.sdk_span_entered and record.written is None and record.http_status is None:
            record.written = False  # refused before anything was sent (session already closed)
        if record.transport_outcome in (None, TransportOutcome.OK.value):
            pipe = record.state.network_transport == "pipe"
            record.transport_outcome = (
                TransportOutcome.PROCESS_EXIT.value
                if pipe
                else TransportOutcome.CONNECTION_LOST.value
            )
        record.error_type = record.transport_outcome
    elif (
        code is not None
        and record.http_status is not None
        and record.http_status >= 400
        and not record.http_json_body
    ):
        # The SDK collapsed an HTTP error status into a JSON-RPC code it made up: keep the status.
        record.error_type = str(record.http_status)
    elif code is not None:
        if record.transport_outcome is None:
            record.transport_outcome = TransportOutcome.OK.value
        if record.written is None:
            record.written = True
        record.error_type = attrs[A.RPC_RESPONSE_STATUS_CODE] = cap(str(code))
    elif _is_cancellation(exc):
        _host_cancelled(record, attrs)
    elif _is_validation_error(exc):
        attrs[A.PROTOCOL_RESULT_VALID] = False
        record.error_type = record.exception_type
    elif record.transport_outcome not in (None, TransportOutcome.OK.value):
        record.error_type = record.transport_outcome
    else:
        record.error_type = record.exception_type
    if record.recording and attrs:
        record.span.set_attributes(attrs)


def _host_cancelled(record: RequestRecord, attrs: dict[str, Any]) -> None:
    """The host stopped waiting (docs/model.md#silence): whoever stopped waiting, silence after a
    possible write is silence, recorded as a timeout; before the write there was no call."""
    record.cancelled = True
    record.error_type = record.exception_type
    attrs[A.CALL_CANCELLED] = True
    if record.answered:
        return  # the answer had arrived: the host only abandoned what came after it
    if record.write_started is False or record.written is False:
        record.written = False
        return
    record.timed_out = True
    attrs[A.CALL_TIMED_OUT] = True
    if record.written is True and record.transport_outcome is None:
        record.transport_outcome = TransportOutcome.OK.value


def _is_cancellation(exc: BaseException) -> bool:
    """A cancellation of the awaiting task (asyncio, or trio under anyio), never a failure."""
    return isinstance(exc, asyncio.CancelledError) or type(exc).__name__ == "Cancelled"


def waiting_for_user(session: Any, record: RequestRecord | None, waiting: bool) -> None:
    """The server asked this session's user something (elicitation) during a ``tools/call``.

    Set on the open span so the processor's in-flight gauge says ``waiting_for_user`` instead of
    judging the call's clocks; cleared (``False``) when the answer is sent back. The call is the
    one whose context the server's request carries (streamable HTTP, in-process); where no
    context travels (stdio), it is the session's only open call, and none when several are open.
    """
    state = _state.SESSIONS.get(session)
    if state is None:
        return
    if record is None or record.state is not state or record.method != "tools/call":
        open_calls = [r for r in state.open_calls if not r.ended]
        record = open_calls[0] if len(open_calls) == 1 else None
    if record is not None and not record.ended and record.recording:
        record.span.set_attribute(A.CALL_WAITING_FOR_USER, waiting)


def on_validated(record: RequestRecord, slot: Slot) -> None:
    """``call_tool``'s output-schema check ran; put its verdict on the ``tools/call`` span."""
    if slot.output_schema_valid is not None and record.recording:
        record.span.set_attribute(A.CALL_OUTPUT_SCHEMA_VALID, slot.output_schema_valid)


def output_schema_checked(slot: Slot, session: Any, name: Any, exc: BaseException | None) -> None:
    """``validate_tool_result`` returned or raised: valid, invalid, or no schema (absent)."""
    if exc is not None:
        slot.output_schema_valid = False
    elif getattr(session, "_tool_output_schemas", {}).get(name) is not None:
        slot.output_schema_valid = True


def finish(telemetry: Telemetry, record: RequestRecord) -> None:
    """End the request's span once, with its final evidence, and record its duration."""
    if record.ended:
        return
    record.ended = True
    record.state.open_calls.discard(record)
    span = record.span
    attrs: dict[str, Any] = {}
    if record.transport_outcome is not None:
        attrs[A.TRANSPORT_OUTCOME] = record.transport_outcome
    if record.written is not None:
        attrs[A.TRANSPORT_REQUEST_WRITTEN] = record.written
    if record.error_type is not None:
        attrs[A.ERROR_TYPE] = record.error_type
    if record.recording:
        span.set_attributes(attrs)
        if record.error_type is not None:
            span.set_status(Status(StatusCode.ERROR))
        if record.exception_type is not None:
            span.add_event(A.EXCEPTION_EVENT, {A.EXCEPTION_TYPE: record.exception_type})
    if not record.borrowed and not record.end_deferred:
        span.end()
    metric: dict[str, Any] = {A.MCP_METHOD_NAME: record.method}
    metric.update(_connection_attributes(record.state))
    if record.error_type is not None:
        metric[A.ERROR_TYPE] = record.error_type
    if record.tool_name is not None and record.method == "tools/call":
        metric[A.GEN_AI_TOOL_NAME] = record.tool_name
        metric[A.GEN_AI_OPERATION_NAME] = A.GEN_AI_OPERATION_EXECUTE_TOOL
    elapsed = time.perf_counter() - record.started
    telemetry.operation_duration.record(elapsed, telemetry.operation_labels.apply(metric))
    if record.on_finished is not None:
        record.on_finished()  # e.g. start the outcome verifier that will end the span


# ----------------------------------------------------------------------------------------------
# Streamable HTTP transport (captured before the SDK collapses statuses into -32603)
# ----------------------------------------------------------------------------------------------
def on_http_request(record: RequestRecord, transport: Any) -> None:
    """A POST for this request is about to go out: learn the server identity and session id."""
    state = record.state
    if state.network_transport is None:
        state.network_transport = "tcp"
        url = urlsplit(str(transport.url))
        state.server_address = url.hostname
        state.server_port = url.port or _DEFAULT_PORTS.get(url.scheme)
    session_id = getattr(transport, "session_id", None)
    if isinstance(session_id, str):
        state.session_id = cap(session_id)
    if record.recording:
        attrs = _connection_attributes(state)
        attrs[A.NETWORK_PROTOCOL_NAME] = "http"
        if state.session_id is not None:
            attrs[A.MCP_SESSION_ID] = state.session_id
        record.span.set_attributes(attrs)


def post_matches(record: RequestRecord, post_ctx: Any) -> bool:
    """Is this POST the one carrying the request (not a cancel notification sent in its context)?"""
    message = post_ctx.session_message.message
    if getattr(message, "method", None) != record.method or not hasattr(message, "id"):
        return False
    return record.request_id is None or str(message.id) == record.request_id


def on_http_response(record: RequestRecord, response: Any) -> None:
    """The POST got a response: status, sanitized ``WWW-Authenticate``, session id."""
    status = int(response.status_code)
    headers = response.headers
    record.http_status = status
    record.written = True
    record.http_json_body = headers.get("content-type", "").lower().startswith("application/json")
    record.transport_outcome = (
        TransportOutcome.HTTP_ERROR.value if status >= 500 else TransportOutcome.OK.value
    )
    attrs: dict[str, Any] = {A.HTTP_RESPONSE_STATUS_CODE: status}
    if status in (401, 403):
        error, scopes = parse_www_authenticate(headers.get("www-authenticate"))
        if error is not None:
            attrs[A.AUTH_ERROR] = error
        if scopes:
            attrs[A.AUTH_REQUIRED_SCOPES] = list(scopes)
    session_id = headers.get("mcp-session-id")
    if isinstance(session_id, str) and session_id:
        record.state.session_id = attrs[A.MCP_SESSION_ID] = cap(session_id)
    if record.recording:
        record.span.set_attributes(attrs)


def parse_www_authenticate(header: str | None) -> tuple[str | None, tuple[str, ...]]:
    """Keep only the RFC 6750 ``error`` code (when it is one we know) and the ``scope`` names.

    The raw challenge, ``error_description``, ``error_uri`` and ``resource_metadata`` are dropped.
    """
    if not header:
        return None, ()
    error = None
    if (match := _AUTH_ERROR_RE.search(header)) is not None:
        code = (match.group(1) or match.group(2) or "").strip().lower()
        if code in (AuthError.INVALID_TOKEN.value, AuthError.INSUFFICIENT_SCOPE.value):
            error = code
    scopes: tuple[str, ...] = ()
    if (match := _AUTH_SCOPE_RE.search(header)) is not None:
        names = (match.group(1) or match.group(2) or "").split()
        scopes = tuple(n for n in names if _SCOPE_TOKEN_RE.match(n))[:_MAX_SCOPES]
    return error, scopes


def on_http_error(record: RequestRecord, exc: BaseException) -> None:
    """The POST itself failed (the caller will only see a cancellation): classify by type."""
    outcome, written, oauth = classify_transport_exception(exc)
    if oauth:
        # The OAuth flow starts from the server's 401/403: the exchange itself worked.
        outcome = outcome or TransportOutcome.OK.value
        written = True if written is None else written
        if record.recording:
            record.span.set_attribute(A.AUTH_ERROR, AuthError.OAUTH_ERROR.value)
        record.error_type = AuthError.OAUTH_ERROR.value
    if outcome is not None:
        record.transport_outcome = outcome
        record.error_type = record.error_type or outcome
    if written is not None:
        record.written = written
    record.exception_type = type(_leaf(exc)).__qualname__


def classify_transport_exception(exc: BaseException) -> tuple[str | None, bool | None, bool]:
    """``(transport outcome, request written, OAuth failure)`` from exception types alone.

    Walks ExceptionGroup leaves and the ``__cause__``/``__context__`` chain, so
    ``httpx2.ConnectError <- httpcore2.ConnectError <- socket.gaierror`` is a DNS failure.
    """
    import httpx2
    from mcp.client.auth.exceptions import OAuthFlowError

    outcome: str | None = None
    written: bool | None = None
    oauth = False
    for item in _chain(exc):
        if isinstance(item, OAuthFlowError):
            oauth = True
        elif isinstance(item, httpx2.ConnectError | httpx2.ConnectTimeout):
            written = False
            outcome = outcome or TransportOutcome.CONNECTION_LOST.value
        elif isinstance(item, socket.gaierror):
            outcome = TransportOutcome.DNS_FAILURE.value
        elif isinstance(item, ConnectionRefusedError):
            outcome = TransportOutcome.CONNECTION_REFUSED.value
        elif isinstance(item, ConnectionResetError):
            outcome = TransportOutcome.CONNECTION_RESET.value
        elif isinstance(item, ssl.SSLError | ssl.CertificateError):
            outcome = TransportOutcome.TLS_FAILURE.value
        elif isinstance(item, httpx2.TransportError) and outcome is None:
            outcome = TransportOutcome.CONNECTION_LOST.value
    return outcome, written, oauth


# ----------------------------------------------------------------------------------------------
# Inbound notifications and installed tools
# ----------------------------------------------------------------------------------------------
def on_notification(telemetry: Telemetry, session: Any, method: Any) -> None:
    """Record ``notifications/tools/list_changed``: its arrival time (span start) and session.

    Kind SERVER: semconv's ``mcp.server`` span is "reported ... by the MCP client when the server
    initiates the operation"; a notification received by the client is such an operation.
    """
    if method != A.NOTIFICATION_SPAN_METHOD:
        return
    state = _state.SESSIONS.get(session)
    if state is None:
        return
    attrs: dict[str, Any] = {A.MCP_METHOD_NAME: method, A.SESSION_KEY: state.key}
    attrs.update(_connection_attributes(state))
    if state.session_id is not None:
        attrs[A.MCP_SESSION_ID] = state.session_id
    if state.server_name is not None:
        attrs[A.SERVER_NAME] = state.server_name
    if state.server_version is not None:
        attrs[A.SERVER_VERSION] = state.server_version
    telemetry.tracer.start_span(
        A.NOTIFICATION_SPAN_METHOD, kind=SpanKind.SERVER, attributes=attrs
    ).end()


def installed_tools(telemetry: Telemetry, target: Any, tools: Any) -> None:
    """Emit the ``mcp_health.install`` span for what the application exposes to its agent.

    Whatever ``tools`` holds, the report is never dropped: something that is not a list of tool
    definitions gives a digest error (``tool_not_an_object``), which the processor judges
    ``unverifiable`` (docs/model.md#catalog).
    """
    state = _session_state(target) or _session_state(getattr(target, "session", None))
    if state is None:
        return
    projected, error = _wire_tools(tools)
    attrs: dict[str, Any] = {
        A.SESSION_KEY: state.key,
        A.CATALOG_CLIENT_SOURCE: ClientSource.REGISTERED.value,
        A.CATALOG_CLIENT_TOOL_COUNT: len(projected),
        A.CATALOG_DIGEST_PROJECTION: DIGEST_PROJECTION,
    }
    if error is not None:
        attrs[A.CATALOG_DIGEST_ERROR] = error
    else:
        _set_digest(attrs, A.CATALOG_CLIENT_DIGEST, projected)
    telemetry.tracer.start_span(A.INSTALL_SPAN_NAME, kind=SpanKind.INTERNAL, attributes=attrs).end()


def _session_state(candidate: Any) -> SessionState | None:
    try:
        return _state.SESSIONS.get(candidate)
    except TypeError:  # unhashable (e.g. the ``mcp.Client`` dataclass): not a session
        return None


def _wire_tools(tools: Any) -> tuple[list[Mapping[str, Any]], str | None]:
    """Tool definitions as wire dicts, or the reason they are not tool definitions."""
    try:
        items = list(tools)
    except Exception:
        return [], REASON_TOOL_NOT_AN_OBJECT
    projected: list[Mapping[str, Any]] = []
    for tool in items:
        wire = _wire_tool(tool)
        if wire is None:
            return [], REASON_TOOL_NOT_AN_OBJECT
        projected.append(wire)
    return projected, None


def _wire_tool(tool: Any) -> Mapping[str, Any] | None:
    if isinstance(tool, Mapping):
        return tool
    dump = getattr(tool, "model_dump", None)
    if not callable(dump):
        return None
    try:
        dumped = dump(by_alias=True, exclude_none=True, mode="json")
    except Exception:
        return None
    return dumped if isinstance(dumped, Mapping) else None


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------
def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    stack = [exc]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        if isinstance(item, BaseExceptionGroup):
            stack.extend(item.exceptions)
        for linked in (item.__cause__, item.__context__):
            if linked is not None:
                stack.append(linked)


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _error_type_of(exc: BaseException) -> str:
    code = _mcp_code(exc)
    if code == _REQUEST_TIMEOUT:
        return A.ERROR_TYPE_TIMEOUT
    return str(code) if code is not None else type(exc).__qualname__


def _mcp_code(exc: BaseException) -> int | None:
    from mcp.shared.exceptions import MCPError

    return exc.code if isinstance(exc, MCPError) else None


def _is_validation_error(exc: BaseException) -> bool:
    from pydantic import ValidationError

    return isinstance(exc, ValidationError)
