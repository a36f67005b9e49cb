"""What the instrumentation knows about the MCP SDK's own conventions (private, no hooks)."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Final

from otel_mcp_health import attributes as A
from otel_mcp_health.core.facts import Failure
from otel_mcp_health.core.failures import is_cancellation
from otel_mcp_health.core.vocabulary import Era


def sdk_version() -> str:
    """The version of the ``mcp`` distribution in use, for messages."""
    try:
        return version("mcp")
    except PackageNotFoundError:
        return "(not installed)"


def _sdk_line() -> int:
    """The major version of the ``mcp`` in use (0 when it is missing or unreadable)."""
    try:
        return int(sdk_version().split(".", 1)[0])
    except ValueError:
        return 0


#: ``1`` or ``2``: which SDK line the hooks are picked for (docs/configuration.md#supported-sdks).
MCP_LINE: Final = _sdk_line()
# JSON-RPC codes the SDK synthesizes itself (never on the wire): mcp_types.jsonrpc on 2.x; the
# 1.x line reports a timeout as HTTP's 408 in an ``McpError`` (mcp.shared.session).
CONNECTION_CLOSED: Final = -32000
REQUEST_TIMEOUT: Final = 408 if MCP_LINE == 1 else -32001
#: The ``mcp_health.evidence.missing`` name of a forgotten server's discovery (``_servers``).
SERVER_DISCOVERY: Final = "server_discovery"
#: Evidence a private SDK hook provides -> what its absence costs (the warning's wording).
EVIDENCE: Final = {
    "request_id": "jsonrpc.request.id",
    "request_write": "whether a cancelled request was written (silence vs no call)",
    "sdk_span": "one CLIENT span per request (the SDK's own span is not taken over)",
    "http_status": "HTTP status, WWW-Authenticate error and scopes, transport failures",
    "list_changed": "notifications/tools/list_changed (stale catalogs)",
    "elicitation": "waiting_for_user while the server asks the user",
    "progress_token": "progress naming another request's token",
    "output_schema": "the SDK's output-schema verdict",
    "stdio_transport": "network.transport=pipe for stdio sessions",
    "in_process_identity": "telling apart in-process servers of one name and version",
    "get_stream": "whether the GET stream that carries list_changed is attached",
    "listen": "whether a subscriptions/listen stream carries list_changed (2026-07-28)",
    "stream_end": "the end of a stdio or SSE session's own stream while it is open",
    # Not an SDK hook: an agent framework's hook point of another shape (frameworks/_hooks.py).
    "framework_install": "the tools an agent framework installs for its model",
    # Not an SDK hook: the bounded per-server registry forgot the discovery a session without one
    # of its own is checked against (instrumentation/_servers.py); on that session's calls only.
    SERVER_DISCOVERY: "the call-time checks of a session that inherits its server's discovery",
}
#: Evidence only a streamable HTTP session can miss, and evidence only other sessions can miss.
HTTP_ONLY_EVIDENCE: Final = frozenset({"http_status", "get_stream"})
NOT_HTTP_EVIDENCE: Final = frozenset({"stdio_transport", "in_process_identity"})
HANDSHAKE_METHODS: Final = {"initialize": Era.INITIALIZE, "server/discover": Era.DISCOVER}
PROTOCOL_VERSION_META_KEY: Final = "io.modelcontextprotocol/protocolVersion"


def requested_version(method: str, params: Mapping[str, Any]) -> str | None:
    """The protocol version a handshake request asks for."""
    if method == "initialize":
        version = params.get("protocolVersion")
    else:
        meta = params.get("_meta")
        version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, Mapping) else None
    return version if isinstance(version, str) else None


def mcp_code(exc: BaseException) -> int | None:
    """The JSON-RPC code of an ``MCPError`` (2.x) or ``McpError`` (1.x)."""
    from mcp.shared import exceptions

    error_class = getattr(exceptions, "MCPError", None) or getattr(exceptions, "McpError", None)
    if error_class is None or not isinstance(exc, error_class):
        return None
    code = getattr(getattr(exc, "error", None), "code", None)
    return code if isinstance(code, int) else None


def error_type_of(exc: BaseException) -> str:
    """``error.type`` of an exception: ``timeout``, a JSON-RPC code or the class name."""
    code = mcp_code(exc)
    if code == REQUEST_TIMEOUT:
        return A.ERROR_TYPE_TIMEOUT
    return str(code) if code is not None else type(exc).__qualname__


def failure_of(exc: BaseException) -> Failure:
    """What an exception a request raised is, by type and the SDK's code only."""
    code = mcp_code(exc)
    if code == REQUEST_TIMEOUT:
        return Failure.TIMEOUT
    if code == CONNECTION_CLOSED:
        return Failure.CLOSED
    if code is not None:
        return Failure.RPC
    if is_cancellation(exc):
        return Failure.CANCELLED
    if is_validation_error(exc):
        return Failure.INVALID
    return Failure.OTHER


def is_validation_error(exc: BaseException) -> bool:
    """A result that does not match the negotiated schema (pydantic)."""
    from pydantic import ValidationError

    return isinstance(exc, ValidationError)


def wire_result(result: Any) -> Any:
    """A result as it was on the wire: 1.x hands back a pydantic model (camelCase aliases)."""
    dump = getattr(result, "model_dump", None)
    if dump is None:
        return result
    return dump(by_alias=True, mode="json", exclude_none=True)


def result_is_error(result: Any) -> bool | None:
    """``CallToolResult.is_error`` (2.x) or ``isError`` (1.x); ``None`` for anything else."""
    # Through __dict__: a getattr miss on a model is slow (docs/performance.md).
    fields = getattr(result, "__dict__", None)
    if not isinstance(fields, dict):
        return None
    for name in ("is_error", "isError"):
        value = fields.get(name)
        if isinstance(value, bool):
            return value
    return None
