"""Hooks of one request's outcome: a result envelope or an exception, classified by type and code.

A hook module (the seam's contract: :data:`._compat.HOOK_MODULES`). An outcome becomes a fact
of its request (``Result``, ``Raised``, ``HandshakeResult``); what it means is decided when the
request ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any

from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.facts import HandshakeResult, Raised, Result
from otel_mcp_health.instrumentation import _catalog_hooks, _notifications
from otel_mcp_health.instrumentation._sdk import (
    HANDSHAKE_METHODS,
    failure_of,
    mcp_code,
    requested_version,
    result_is_error,
    wire_result,
)
from otel_mcp_health.instrumentation._state import RequestRecord, Telemetry

_SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"


def on_result(telemetry: Telemetry, record: RequestRecord, result: Any) -> None:
    """The request returned a result envelope (2.x: the raw wire dict; 1.x: the typed model)."""
    if record.method == "tools/call":
        record.observe(Result(_tool_is_error(result) if record.recording else None))
        return
    record.observe(Result())
    result = wire_result(result)
    if not isinstance(result, Mapping):
        return
    if record.method in HANDSHAKE_METHODS:
        record.observe(_handshake_result(record, result))
    if record.recording and record.method == "tools/list":
        _catalog_hooks.page_result(telemetry, record, result)


def _tool_is_error(result: Any) -> bool | None:
    """A tool result's ``isError`` (``None``: not a tool result), read off the 1.x typed model
    without dumping it (its content may be large) or off the 2.x wire dict."""
    if isinstance(result, Mapping):
        tool_result = "content" in result or "isError" in result
        return result.get("isError") is True if tool_result else None
    return result_is_error(result)


def _handshake_result(record: RequestRecord, result: Mapping[str, Any]) -> HandshakeResult:
    """What the handshake's result says (the session learns it at once, the span at the end)."""
    state = record.state
    requested = requested_version(record.method, record.params)
    if record.method == "initialize":
        negotiated = result.get("protocolVersion")
        info = result.get("serverInfo")
    else:
        supported = result.get("supportedVersions")
        negotiated = requested if isinstance(supported, list) and requested in supported else None
        meta = result.get("_meta")
        info = meta.get(_SERVER_INFO_META_KEY) if isinstance(meta, Mapping) else None
    negotiated = cap(negotiated) if isinstance(negotiated, str) else None
    name, version = (_capped(info, key) for key in ("name", "version"))
    if negotiated is not None:
        state.protocol_version = negotiated
    if name is not None:
        state.server_name = name
    if version is not None:
        state.server_version = version
    capabilities = result.get("capabilities")
    tools = capabilities.get("tools") if isinstance(capabilities, Mapping) else None
    return HandshakeResult(
        requested=requested,
        negotiated=negotiated,
        tools=isinstance(tools, Mapping),
        list_changed=isinstance(tools, Mapping) and tools.get("listChanged") is True,
        target_key=state.server_target(),
        server_name=name,
        server_version=version,
        channel=_notifications.channel_of(record.method, state),
    )


def _capped(info: Any, key: str) -> str | None:
    value = info.get(key) if isinstance(info, Mapping) else None
    return cap(value) if isinstance(value, str) else None


def on_error(record: RequestRecord, exc: BaseException) -> None:
    """An exception left one of the request's layers: its type and what the SDK's code means.

    Several nested layers may see the same exception; the fold keeps the first classification.
    Each layer unlinks the frames of ours the exception passed through before it re-raises.
    """
    code = mcp_code(exc)
    record.observe(Raised(failure_of(exc), type(exc).__qualname__, code))
    _hide_our_frames(exc)


def _hide_our_frames(exc: BaseException) -> None:
    """Unlink the product's frames from the traceback of an exception the SDK raised, before the
    wrapper re-raises it: the application (and a framework that shows the model the traceback of
    a failed call) sees the frames it would see without the product. The exception object, its
    message and every other frame stay as they are."""
    head = exc.__traceback__
    while head is not None and _is_ours(head):
        head = head.tb_next
    exc.__traceback__ = head
    while head is not None:
        following = head.tb_next
        while following is not None and _is_ours(following):
            following = following.tb_next
        head.tb_next = following
        head = following


def _is_ours(entry: TracebackType) -> bool:
    return str(entry.tb_frame.f_globals.get("__name__", "")).startswith(_PACKAGE)


_PACKAGE = "otel_mcp_health."
