"""The facts of one request: what a hook of the instrumentation saw, nothing decided (pure).

Each hook appends one of these to its request, in the order it saw it; :mod:`.fold` turns them
into the request's records when it ends. Exceptions are reduced to their type name and what the
SDK's error code means (:class:`Failure`); nothing here holds argument values, result text,
headers or messages (docs/model.md#privacy).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from otel_mcp_health.core.approval import Approval
from otel_mcp_health.core.evidence import OutcomeEvidence, Page
from otel_mcp_health.core.vocabulary import AuthError


class Failure(StrEnum):
    """What an exception the request raised is, by type and the SDK's code only."""

    TIMEOUT = "timeout"  # the SDK's request timeout
    CLOSED = "closed"  # the SDK's connection-closed error
    RPC = "rpc"  # any other MCP error: a JSON-RPC error (or a code the SDK made up)
    CANCELLED = "cancelled"  # the host stopped waiting
    INVALID = "invalid"  # the result did not validate
    OTHER = "other"


# ----------------------------------------------------------------------------------------------
# Facts: what one hook saw, nothing decided
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class HttpResponse:
    """The POST that carried the request got a response."""

    status: int
    json_body: bool = False
    auth_error: AuthError | None = None
    scope: tuple[str, ...] = ()
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class HttpFailure:
    """The POST failed: its failure chain, classified (an error status the HTTP client raised
    for, whose response came first as an :class:`HttpResponse`; or a transport failure)."""

    exception_type: str
    status: int | None = None
    outcome: str | None = None
    written: bool | None = None
    oauth: bool = False


@dataclass(frozen=True, slots=True)
class SdkEntered:
    """The SDK took the request: its span block began (``write_visible``: the write that follows
    can be seen) or, on 1.x, the session took it to write it."""

    write_visible: bool = True


@dataclass(frozen=True, slots=True)
class WriteStarted:
    """The request itself was handed to the transport."""


@dataclass(frozen=True, slots=True)
class SdkExit:
    """The SDK's span block ended, normally (``None``) or with this failure."""

    failure: Failure | None = None


@dataclass(frozen=True, slots=True)
class Result:
    """A result envelope arrived; ``is_error``: a ``tools/call`` result's ``isError``."""

    is_error: bool | None = None


@dataclass(frozen=True, slots=True)
class Raised:
    """An exception left one of the request's layers (type name and SDK code only)."""

    failure: Failure
    exception_type: str
    code: int | None = None


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """The SDK's output-schema check of a ``tools/call`` result."""

    valid: bool


@dataclass(frozen=True, slots=True)
class Outcome:
    """The tool's outcome policy gave a receipt at once (``not_required``)."""

    outcome: OutcomeEvidence


@dataclass(frozen=True, slots=True)
class HandshakeResult:
    """An ``initialize`` / ``server/discover`` result (capped names, no other content)."""

    requested: str | None = None
    negotiated: str | None = None
    tools: bool = False
    list_changed: bool = False
    target_key: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    #: Where the session hears ``list_changed`` (``mcp_health.session.notification_channel``).
    channel: str | None = None


@dataclass(frozen=True, slots=True)
class CatalogEnd:
    """The last page of an intact traversal: the catalog's size and digest (or why none)."""

    tool_count: int
    projection: str | None = None
    digest: str | None = None
    digest_error: str | None = None
    #: The catalog compared with its approved catalog (``None``: no pins configured).
    approval: Approval | None = None


@dataclass(frozen=True, slots=True)
class PageResult:
    """One ``tools/list`` page: cursor hashes, size, digest, place in the chain, catalog end."""

    page: Page
    tool_count: int
    digest: str | None = None
    digest_error: str | None = None
    index: int | None = None
    catalog: CatalogEnd | None = None


Fact = (
    HttpResponse
    | HttpFailure
    | SdkEntered
    | WriteStarted
    | SdkExit
    | Result
    | Raised
    | OutputSchema
    | Outcome
    | HandshakeResult
    | PageResult
)
