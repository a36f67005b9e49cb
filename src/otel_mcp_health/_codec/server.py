"""A server's identity ↔ span attributes (private; docs/model.md#scope).

:class:`~otel_mcp_health.core.server.ServerIdentity` is built from what spans name: a handshake
or install span names the catalog key (target key, server name and version), every span of a
session may name a part of the exported label (address and port on the connection, the name
once the handshake answered). The incident key a span exports hashes the identity's incident
scope in the form :func:`scope_material` gives it.
"""

from __future__ import annotations

from typing import Any, Final

from otel_mcp_health import attributes as A
from otel_mcp_health._codec._read import Attributes, present, read_str
from otel_mcp_health._codec.session import decode_connection
from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.server import (
    CatalogKey,
    IncidentScope,
    ServerIdentity,
    ServerLabel,
)

_CATALOG_KEY: Final = (A.SERVER_TARGET_KEY, A.SERVER_NAME, A.SERVER_VERSION)
#: The server name of a server no span named (metric label).
UNKNOWN_SERVER: Final = "unknown"


def encode_catalog_key(key: CatalogKey | None) -> dict[str, Any]:
    """What names a session's server on a handshake or install span (the parts named)."""
    if key is None:
        return {}
    parts = (key.target_key, key.name, key.version)
    return present(dict(zip(_CATALOG_KEY, parts, strict=True)))


def decode_catalog_key(attrs: Attributes) -> CatalogKey | None:
    """The catalog key a handshake or install span names, ``None`` when it names no part."""
    target, name, version = (read_str(attrs, key) for key in _CATALOG_KEY)
    if target is None and name is None and version is None:
        return None
    return CatalogKey(target, name, version)


def decode_server(attrs: Attributes, known: ServerIdentity) -> ServerIdentity:
    """The server of a span of a session whose server is ``known`` so far: what the span names
    (target key, address, port, server name; long values capped as exported) completes what
    earlier spans of the session named. A span that leaves the server without an incident scope
    changes nothing (a port alone names no server)."""
    label, connection = known.label, decode_connection(attrs)
    address, port = connection.server_address, connection.server_port
    name = read_str(attrs, A.SERVER_NAME)
    label = ServerLabel(
        name=cap(name) if name is not None else label.name,
        address=cap(address) if address is not None else label.address,
        port=port if port is not None else label.port,
    )
    target = read_str(attrs, A.SERVER_TARGET_KEY)
    found = ServerIdentity(known.target_key if target is None else target, label, known.catalog)
    return found if found.scope is not None else known


def label_attributes(label: ServerLabel) -> dict[str, Any]:
    """The exported label as metric attributes, in the order address, port, name
    (``mcp_health.server.name = unknown`` when no span named any part)."""
    if not label.known:
        return {A.SERVER_NAME: UNKNOWN_SERVER}
    return present(
        {A.SERVER_ADDRESS: label.address, A.SERVER_PORT: label.port, A.SERVER_NAME: label.name}
    )


def scope_material(scope: IncidentScope | None) -> str:
    """The incident scope as the exported incident key hashes it (``unknown`` without one)."""
    if scope is None:
        return UNKNOWN_SERVER
    return f"{scope.kind.value}\x00{scope.value}"
