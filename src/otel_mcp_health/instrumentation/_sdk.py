"""What the instrumentation knows about the MCP SDK's own conventions (private, no hooks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from otel_mcp_health import attributes as A
from otel_mcp_health.core.vocabulary import Era

# JSON-RPC codes the SDK synthesizes itself (never on the wire): mcp_types.jsonrpc.
CONNECTION_CLOSED: Final = -32000
REQUEST_TIMEOUT: Final = -32001
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
    """The JSON-RPC code of an ``MCPError``."""
    from mcp.shared.exceptions import MCPError

    return exc.code if isinstance(exc, MCPError) else None


def error_type_of(exc: BaseException) -> str:
    """``error.type`` of an exception: ``timeout``, a JSON-RPC code or the class name."""
    code = mcp_code(exc)
    if code == REQUEST_TIMEOUT:
        return A.ERROR_TYPE_TIMEOUT
    return str(code) if code is not None else type(exc).__qualname__


def is_validation_error(exc: BaseException) -> bool:
    """A result that does not match the negotiated schema (pydantic)."""
    from pydantic import ValidationError

    return isinstance(exc, ValidationError)
