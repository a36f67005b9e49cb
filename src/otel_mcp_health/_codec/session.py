"""Evidence of a session: the handshake and the server it names, one ``tools/list`` page, a call's
progress clocks and ``mcp_health.progress`` events (docs/attributes.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from otel_mcp_health import attributes as A
from otel_mcp_health._codec import server  # a module: it reads connections through this one
from otel_mcp_health._codec.approval import encode_catalog_approval
from otel_mcp_health._codec.call import (
    decode_authorization,
    decode_transport,
    encode_exchange,
    encode_rpc_code,
)
from otel_mcp_health.core.bounds import cap_names
from otel_mcp_health.core.evidence import (
    HandshakeEvidence,
    InstallCheck,
    Page,
    ProgressEvent,
    ProgressEvidence,
)
from otel_mcp_health.core.facts import HandshakeResult, PageResult
from otel_mcp_health.core.server import CatalogKey
from otel_mcp_health.core.vocabulary import Era

from ._read import Attributes, present, read_bool, read_float, read_int, read_names, read_str

if TYPE_CHECKING:  # the instrumentation writes through this module without the SDK
    from opentelemetry.sdk.trace import Event

#: Progress token written for notifications that matched the request's own token; any other value
#: stands for "a token of another request" (the instrumentation records only the match,
#: docs/model.md#privacy).
REQUEST_TOKEN = "request"
OTHER_TOKEN = "other"
#: ``error.type`` of a failed page whose JSON-RPC code is unknown.
_PAGE_FAILED = "page_failed"
#: What a digest is of, and its attribute.
DigestOf = Literal["catalog", "client", "page"]
_DIGEST_KEYS: dict[DigestOf, str] = {
    "catalog": A.CATALOG_DIGEST,
    "client": A.CATALOG_CLIENT_DIGEST,
    "page": A.CATALOG_PAGE_DIGEST,
}
#: One span event: name, attributes, timestamp (ns).
SpanEvent = tuple[str, dict[str, Any], int]


@dataclass(frozen=True, slots=True)
class Connection:
    """Version, transport and server identity: on every span and duration of a session."""

    protocol_version: str | None = None
    network_transport: str | None = None
    server_address: str | None = None
    server_port: int | None = None


def encode_connection(connection: Connection) -> dict[str, Any]:
    return present(
        {
            A.MCP_PROTOCOL_VERSION: connection.protocol_version,
            A.NETWORK_TRANSPORT: connection.network_transport,
            A.SERVER_ADDRESS: connection.server_address,
            A.SERVER_PORT: connection.server_port,
        }
    )


def decode_connection(attrs: Attributes) -> Connection:
    return Connection(
        protocol_version=read_str(attrs, A.MCP_PROTOCOL_VERSION),
        network_transport=read_str(attrs, A.NETWORK_TRANSPORT),
        server_address=read_str(attrs, A.SERVER_ADDRESS),
        server_port=read_int(attrs, A.SERVER_PORT),
    )


def encode_handshake(handshake: HandshakeEvidence) -> dict[str, Any]:
    """A handshake (without ``supported_versions``: the processor's option, not the span's)."""
    attrs = encode_exchange(handshake.transport, handshake.authorization)
    attrs.update(encode_versions(handshake.requested_version, handshake.negotiated_version))
    if handshake.error_code is not None:
        attrs[A.RPC_RESPONSE_STATUS_CODE] = encode_rpc_code(handshake.error_code)
    if handshake.capabilities is not None:
        attrs.update(encode_tools_capability(handshake.capabilities.get("tools")))
    return attrs


def encode_versions(requested: str | None, negotiated: str | None) -> dict[str, Any]:
    """The protocol version the client asked for and the one the server answered with."""
    return present({A.SESSION_REQUESTED_VERSION: requested, A.MCP_PROTOCOL_VERSION: negotiated})


def encode_tools_capability(tools: Any) -> dict[str, Any]:
    """The server's ``capabilities.tools`` (absent or an object with ``listChanged``)."""
    offered = isinstance(tools, Mapping)
    return {
        A.SESSION_CAPABILITY_TOOLS: offered,
        A.SESSION_CAPABILITY_TOOLS_LIST_CHANGED: offered and tools.get("listChanged") is True,
    }


def decode_handshake(
    attrs: Attributes, supported_versions: tuple[str, ...] | None
) -> HandshakeEvidence:
    """An ``initialize`` / ``server/discover`` span as the handshake of a session record."""
    capabilities: dict[str, Any] | None = None
    tools = read_bool(attrs, A.SESSION_CAPABILITY_TOOLS)
    if tools is not None:
        capabilities = {}
        if tools:
            list_changed = read_bool(attrs, A.SESSION_CAPABILITY_TOOLS_LIST_CHANGED) is True
            capabilities["tools"] = {"listChanged": list_changed}
    return HandshakeEvidence(
        requested_version=read_str(attrs, A.SESSION_REQUESTED_VERSION),
        negotiated_version=read_str(attrs, A.MCP_PROTOCOL_VERSION),
        error_code=read_int(attrs, A.RPC_RESPONSE_STATUS_CODE),
        capabilities=capabilities,
        supported_versions=supported_versions,
        transport=decode_transport(attrs),
        authorization=decode_authorization(attrs),
    )


def encode_era(era: Era) -> dict[str, Any]:
    """How a handshake span negotiates its session (``initialize`` or ``server/discover``)."""
    return {A.SESSION_ERA: era.value}


def encode_handshake_result(
    result: HandshakeResult, handshake: HandshakeEvidence
) -> dict[str, Any]:
    """A handshake span's evidence: the handshake record and the server it named."""
    attrs = encode_handshake(handshake)
    key = CatalogKey(result.target_key, result.server_name, result.server_version)
    attrs.update(server.encode_catalog_key(key))
    if result.channel is not None:
        attrs[A.SESSION_NOTIFICATION_CHANNEL] = result.channel
    return attrs


def encode_channel(channel: str, *, opened: bool) -> dict[str, Any]:
    """A session's notification channel attached (``opened``) or ended (docs/model.md#scope)."""
    return {A.SESSION_NOTIFICATION_CHANNEL: channel, A.CHANNEL_OPEN: opened}


def decode_channel(attrs: Attributes) -> str:
    """The notification channel a handshake span names; unnamed, the one its era implies (a
    ``server/discover`` session hears changes on a ``subscriptions/listen`` stream only)."""
    channel = read_str(attrs, A.SESSION_NOTIFICATION_CHANNEL)
    if channel is not None:
        return channel
    discover = read_str(attrs, A.SESSION_ERA) == Era.DISCOVER.value
    return A.CHANNEL_LISTEN_STREAM if discover else A.CHANNEL_SESSION


def decode_channel_open(attrs: Attributes) -> bool | None:
    """On an ``mcp_health.channel`` span: the channel attached (``True``) or ended (``False``)."""
    return read_bool(attrs, A.CHANNEL_OPEN)


def encode_superseded() -> dict[str, Any]:
    """A failed ``server/discover`` probe that the session's fallback handshake superseded."""
    return {A.SESSION_SUPERSEDED: True}


def decode_superseded(attrs: Attributes) -> bool:
    return read_bool(attrs, A.SESSION_SUPERSEDED) is True


def encode_origin(origin: str) -> dict[str, Any]:
    """Who asked for a ``tools/list`` page: the application, or the SDK internally."""
    return {A.EVIDENCE_ORIGIN: origin}


def decode_origin(attrs: Attributes) -> str | None:
    return read_str(attrs, A.EVIDENCE_ORIGIN)


def encode_page_index(index: int) -> dict[str, Any]:
    """A page's place in its session's cursor chain (0: the first page)."""
    return {A.CATALOG_PAGE_INDEX: index}


def decode_page_index(attrs: Attributes) -> int | None:
    value = attrs.get(A.CATALOG_PAGE_INDEX)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def encode_page(page: Page) -> dict[str, Any]:
    """One ``tools/list`` page: cursor hashes (opaque keys) and failure (not its tools)."""
    attrs = present(
        {A.CATALOG_PAGE_CURSOR_HASH: page.cursor, A.CATALOG_PAGE_NEXT_CURSOR_HASH: page.next_cursor}
    )
    if page.error_code is not None:
        attrs[A.RPC_RESPONSE_STATUS_CODE] = attrs[A.ERROR_TYPE] = encode_rpc_code(page.error_code)
    elif page.failed:
        attrs[A.ERROR_TYPE] = _PAGE_FAILED
    return attrs


def encode_page_result(result: PageResult) -> dict[str, Any]:
    """One ``tools/list`` page as its span ends: size, cursor hashes, digest, place in the chain
    and, on the last page of an intact traversal, the catalog's size and digest."""
    attrs: dict[str, Any] = {A.CATALOG_PAGE_TOOL_COUNT: result.tool_count}
    attrs.update(encode_page(result.page))
    attrs.update(encode_digest(result.digest, result.digest_error, of="page"))
    if result.index is not None:
        attrs.update(encode_page_index(result.index))
    catalog = result.catalog
    if catalog is not None:
        attrs[A.CATALOG_TOOL_COUNT] = catalog.tool_count
        if catalog.projection is not None:
            attrs[A.CATALOG_DIGEST_PROJECTION] = catalog.projection
        attrs.update(encode_digest(catalog.digest, catalog.digest_error))
        attrs.update(encode_catalog_approval(catalog.approval))
    return attrs


def decode_page(attrs: Attributes) -> Page:
    """One ``tools/list`` page: cursor hashes (opaque keys) and failure."""
    code = read_int(attrs, A.RPC_RESPONSE_STATUS_CODE)
    failed = code is not None or A.ERROR_TYPE in attrs
    return Page(
        cursor=read_str(attrs, A.CATALOG_PAGE_CURSOR_HASH),
        next_cursor=read_str(attrs, A.CATALOG_PAGE_NEXT_CURSOR_HASH),
        failed=failed,
        error_code=code,
    )


def encode_digest(
    digest: str | None, error: str | None, *, of: DigestOf = "catalog"
) -> dict[str, Any]:
    """A digest (of the discovered catalog, the client's installed tools or one page), or why
    there is none. The reason is written as plain text: a ``DigestReason`` member is a ``str``
    subclass, not the value type the span carries."""
    reason = None if error is None else str(error)
    return present({_DIGEST_KEYS[of]: digest, A.CATALOG_DIGEST_ERROR: reason})


def decode_digest(attrs: Attributes, *, of: DigestOf = "catalog") -> tuple[str | None, str | None]:
    """``(digest, error)`` of a final page (or of an install span, or of one page)."""
    return read_str(attrs, _DIGEST_KEYS[of]), read_str(attrs, A.CATALOG_DIGEST_ERROR)


def encode_install_check(check: InstallCheck) -> dict[str, Any]:
    """An install compared tool by tool with a discovery: the discovery's size and digest, and
    the names of the installed tools that differ or that it does not list (names only, capped)."""
    attrs = present(
        {
            A.CATALOG_TOOL_COUNT: check.discovered,
            A.CATALOG_CLIENT_TOOL_COUNT: check.installed,
            A.CATALOG_DIGEST: check.discovery_digest,
        }
    )
    if check.changed:
        attrs[A.CATALOG_INSTALL_CHANGED] = cap_names(check.changed)
    if check.unlisted:
        attrs[A.CATALOG_INSTALL_UNLISTED] = cap_names(check.unlisted)
    return attrs


def decode_install_check(attrs: Attributes) -> InstallCheck | None:
    """The comparison an install span carries, or ``None`` when it was compared with nothing."""
    discovered = read_int(attrs, A.CATALOG_TOOL_COUNT)
    if discovered is None:
        return None
    return InstallCheck(
        installed=read_int(attrs, A.CATALOG_CLIENT_TOOL_COUNT) or 0,
        discovered=discovered,
        changed=read_names(attrs, A.CATALOG_INSTALL_CHANGED),
        unlisted=read_names(attrs, A.CATALOG_INSTALL_UNLISTED),
        discovery_digest=read_str(attrs, A.CATALOG_DIGEST),
    )


def encode_progress_notification(
    progress: float | None, total: float | None, *, matched: bool
) -> dict[str, Any]:
    """One ``notifications/progress`` (values only): whether its token was the request's."""
    attrs: dict[str, Any] = {A.PROGRESS_TOKEN_MATCH: matched}
    if progress is not None:
        attrs[A.PROGRESS_VALUE] = float(progress)
    if total is not None:
        attrs[A.PROGRESS_TOTAL] = float(total)
    return attrs


def encode_progress_event(event: ProgressEvent) -> SpanEvent:
    matched = event.token == REQUEST_TOKEN
    attrs = encode_progress_notification(event.progress, event.total, matched=matched)
    return A.PROGRESS_EVENT, attrs, event.at


def encode_clocks(idle_window_s: float | None, deadline_s: float | None) -> dict[str, Any]:
    """A call's configured clocks: the idle window and the host's own deadline."""
    attrs: dict[str, Any] = {}
    if idle_window_s is not None:
        attrs[A.CALL_IDLE_WINDOW_S] = idle_window_s
    if deadline_s is not None:
        attrs[A.CALL_DEADLINE_S] = float(deadline_s)
    return attrs


def decode_progress(
    attrs: Attributes,
    events: Iterable[Event],
    *,
    started_at: int | None,
    now: int | None,
    completed_at: int | None,
) -> ProgressEvidence:
    """The two clocks of a call and its ``mcp_health.progress`` events.

    ``completed_at=None`` means the call is still in flight (the live gauge); a finished span
    passes its end time so that progress after the response counts as late.
    """
    collected = tuple(
        ProgressEvent(
            at=event.timestamp,
            token=REQUEST_TOKEN
            if (event.attributes or {}).get(A.PROGRESS_TOKEN_MATCH) is not False
            else OTHER_TOKEN,
            progress=read_float(event.attributes or {}, A.PROGRESS_VALUE) or 0.0,
            total=read_float(event.attributes or {}, A.PROGRESS_TOTAL),
        )
        for event in events
        if event.name == A.PROGRESS_EVENT
    )
    return ProgressEvidence(
        now=now,
        started_at=started_at,
        completed_at=completed_at,
        in_flight=completed_at is None,
        idle_window_seconds=read_float(attrs, A.CALL_IDLE_WINDOW_S),
        deadline_seconds=read_float(attrs, A.CALL_DEADLINE_S),
        request_token=REQUEST_TOKEN,
        events=collected,
    )
