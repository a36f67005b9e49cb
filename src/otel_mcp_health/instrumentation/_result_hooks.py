"""Hooks of one request's outcome: a result envelope or an exception, classified by type and code.

Every public function here is a hook of the extraction seam: the wrappers call it through this
module's attribute, inside a fence, so a test can make each one raise and prove the host sees no
difference (the host comes first). Nothing here reads argument values, result text, headers other
than ``WWW-Authenticate``'s ``error``/``scope`` or exception messages (docs/model.md#privacy).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_mcp_health import attributes as A
from otel_mcp_health._codec import encode_rpc_code, encode_tools_capability, encode_versions
from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.failures import is_cancellation
from otel_mcp_health.core.vocabulary import TransportOutcome
from otel_mcp_health.instrumentation import _catalog_hooks
from otel_mcp_health.instrumentation._sdk import (
    CONNECTION_CLOSED,
    HANDSHAKE_METHODS,
    REQUEST_TIMEOUT,
    is_validation_error,
    mcp_code,
    requested_version,
    wire_result,
)
from otel_mcp_health.instrumentation._state import RequestRecord, Telemetry

_SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
_OK = TransportOutcome.OK.value


def on_result(telemetry: Telemetry, record: RequestRecord, result: Any) -> None:
    """The request returned a result envelope (2.x: the raw wire dict; 1.x: the typed model)."""
    result = wire_result(result)
    record.answered = True
    if record.written is None:
        record.written = True
    if record.transport_outcome is None:
        record.transport_outcome = _OK
    if not isinstance(result, Mapping):
        return
    if record.method in HANDSHAKE_METHODS:
        _handshake_result(record, result)
    if not record.recording:
        return
    if record.method == "tools/list":
        _catalog_hooks.page_result(telemetry, record, result)
    elif record.method == "tools/call" and ("content" in result or "isError" in result):
        record.is_error = result.get("isError") is True
        if record.is_error:
            record.error_type = A.ERROR_TYPE_TOOL_ERROR


def _handshake_result(record: RequestRecord, result: Mapping[str, Any]) -> None:
    state = record.state
    attrs: dict[str, Any] = {}
    if record.method == "initialize":
        negotiated = result.get("protocolVersion")
        info = result.get("serverInfo")
    else:
        requested = requested_version(record.method, record.params)
        supported = result.get("supportedVersions")
        negotiated = requested if isinstance(supported, list) and requested in supported else None
        meta = result.get("_meta")
        info = meta.get(_SERVER_INFO_META_KEY) if isinstance(meta, Mapping) else None
    if isinstance(negotiated, str):
        negotiated = cap(negotiated)
        state.protocol_version = negotiated
        attrs.update(encode_versions(None, negotiated))
    capabilities = result.get("capabilities")
    tools = capabilities.get("tools") if isinstance(capabilities, Mapping) else None
    attrs.update(encode_tools_capability(tools))
    if state.target_key is not None:
        attrs[A.SERVER_TARGET_KEY] = state.target_key
    if isinstance(info, Mapping):
        if isinstance(info.get("name"), str):
            state.server_name = attrs[A.SERVER_NAME] = cap(info["name"])
        if isinstance(info.get("version"), str):
            state.server_version = attrs[A.SERVER_VERSION] = cap(info["version"])
    record.deferred.update(attrs)


def on_error(record: RequestRecord, exc: BaseException) -> None:
    """An exception left one of the request's layers; classify it by type and code only.

    Several nested layers may see the same exception; the first classification wins.
    """
    if record.error_type is not None:
        return
    record.exception_type = type(exc).__qualname__
    code = mcp_code(exc)
    if code is not None:
        _sdk_error(record, code)
    elif is_cancellation(exc):
        _host_cancelled(record)
    elif is_validation_error(exc):
        record.result_valid = False
        record.error_type = record.exception_type
    elif record.transport_outcome not in (None, _OK):
        record.error_type = record.transport_outcome
    else:
        record.error_type = record.exception_type


def _sdk_error(record: RequestRecord, code: int) -> None:
    """An ``MCPError``: a timeout, a closed connection, an HTTP status or a JSON-RPC error."""
    if code == REQUEST_TIMEOUT:
        record.timed_out = True
        record.written = True if record.written is None else record.written
        if record.transport_outcome is None:  # delivered; only the answer did not come in time
            record.transport_outcome = _OK
        record.error_type = A.ERROR_TYPE_TIMEOUT
    elif code == CONNECTION_CLOSED:
        if not record.sdk_span_entered and record.written is None and record.http_status is None:
            record.written = False  # refused before anything was sent (session already closed)
        if record.transport_outcome in (None, _OK):
            pipe = record.state.network_transport == "pipe"
            record.transport_outcome = (
                TransportOutcome.PROCESS_EXIT if pipe else TransportOutcome.CONNECTION_LOST
            ).value
        record.error_type = record.transport_outcome
    elif record.http_status is not None and record.http_status >= 400 and not record.http_json_body:
        # The SDK collapsed an HTTP error status into a JSON-RPC code it made up: keep the status.
        record.answered = True
        record.error_type = str(record.http_status)
    else:
        record.answered = True
        if record.transport_outcome is None:
            record.transport_outcome = _OK
        if record.written is None:
            record.written = True
        record.error_code = code
        record.error_type = encode_rpc_code(code)


def _host_cancelled(record: RequestRecord) -> None:
    """The host stopped waiting (docs/model.md#silence): whoever stopped waiting, silence after a
    possible write is silence, recorded as a timeout; before the write there was no call."""
    record.cancelled = True
    record.error_type = record.exception_type
    if record.answered:
        return  # the answer had arrived: the host only abandoned what came after it
    if record.write_started is False or record.written is False:
        record.written = False
        return
    record.timed_out = True
    if record.written is True and record.transport_outcome is None:
        record.transport_outcome = _OK
