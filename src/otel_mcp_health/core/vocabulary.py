"""The exported vocabulary (docs/model.md#vocabulary): every verdict, layer, status and next action.

Each enum member's *value* is the exact string that leaves the process (span attribute value,
metric label value, ``classify --json`` field). Nothing else in the project spells these strings:
the classifiers return these members, the instrumentation and processor write ``member.value``,
and the dashboards and alert rules are tested against this module.
"""

from __future__ import annotations

from enum import StrEnum


class CatalogVerdict(StrEnum):
    """docs/model.md#catalog: does the client registry match a fully traversed, fresh discovery?"""

    CONVERGED = "converged"
    STALE = "stale"
    INCOMPLETE = "incomplete"
    UNVERIFIABLE = "unverifiable"


class Layer(StrEnum):
    """docs/model.md#layers: the five call layers, in the order they are checked."""

    TRANSPORT = "transport"
    AUTHORIZATION = "authorization"
    PROTOCOL = "protocol"
    EXECUTION = "execution"
    OUTCOME = "outcome"


#: The layers in checking order (the first failed one is named; later ones are ``unobserved``).
LAYERS: tuple[Layer, ...] = tuple(Layer)


class FirstFailedLayer(StrEnum):
    """Value of ``mcp_health.call.first_failed_layer``: a layer, or ``none``."""

    TRANSPORT = "transport"
    AUTHORIZATION = "authorization"
    PROTOCOL = "protocol"
    EXECUTION = "execution"
    OUTCOME = "outcome"
    NONE = "none"


class LayerStatus(StrEnum):
    """Value of ``mcp_health.layer.<layer>``."""

    PASSED = "passed"
    FAILED = "failed"
    UNOBSERVED = "unobserved"
    NOT_APPLICABLE = "not_applicable"


class Verdict(StrEnum):
    """docs/model.md#contract: the session contract, first match wins (order = precedence)."""

    NEEDS_AUTH = "needs_auth"
    INCOMPATIBLE_SESSION = "incompatible_session"
    STALE_CATALOG = "stale_catalog"
    EFFECT_UNKNOWN = "effect_unknown"
    TRANSPORT_ERROR = "transport_error"
    PROTOCOL_ERROR = "protocol_error"
    TOOL_FAILED = "tool_failed"
    WORKING = "working"
    FALSE_SUCCESS = "false_success"
    HEALTHY = "healthy"
    UNVERIFIED = "unverified"


class NextAction(StrEnum):
    """docs/model.md#next-actions: the safest next step an operator (or agent runtime) can take."""

    RETRY_WITHIN_BUDGET = "retry_within_budget"
    REFRESH_TOKEN_ONCE = "refresh_token_once"
    REQUEST_SCOPE = "request_scope"
    ALIGN_PROTOCOL_VERSION = "align_protocol_version"
    BOUNDED_REDISCOVERY = "bounded_rediscovery"
    RESUME_DISCOVERY = "resume_discovery"
    RECONCILE_BEFORE_RETRY = "reconcile_before_retry"
    FIX_REQUEST_CONTRACT = "fix_request_contract"
    INSPECT_TOOL = "inspect_tool"
    VERIFY_DESTINATION = "verify_destination"
    ADD_OUTCOME_VERIFIER = "add_outcome_verifier"
    #: A tool's definition differs from the approved (pinned) one: a person reviews the change
    #: and re-pins it (docs/evidence-format.md#pin-file); retrying or rediscovering cannot help.
    REVIEW_CATALOG_CHANGE = "review_catalog_change"
    NONE = "none"


class ApprovalVerdict(StrEnum):
    """``mcp_health.catalog.approval``: is a complete discovery the catalog a person approved?

    ``approved``: no tool changed materially and none was added (a removed tool or a cosmetic
    change alone stays approved); ``drifted``: otherwise, or the pins could not be read (fail
    closed); ``unpinned``: no pinned server matches the discovery's server label."""

    APPROVED = "approved"
    DRIFTED = "drifted"
    UNPINNED = "unpinned"


class ChangeKind(StrEnum):
    """How one tool of a discovery differs from its pin (docs/evidence-format.md#member-digests)."""

    MATERIAL = "material"
    COSMETIC = "cosmetic"
    ADDED = "added"
    REMOVED = "removed"


class CallApproval(StrEnum):
    """``mcp_health.call.approval``: is the called tool's current definition the approved one?"""

    APPROVED = "approved"
    UNAPPROVED = "unapproved"
    UNPINNED = "unpinned"


class TransportOutcome(StrEnum):
    """docs/evidence-format.md ``transport.outcome``: how the request fared on the wire."""

    OK = "ok"
    DNS_FAILURE = "dns_failure"
    CONNECTION_REFUSED = "connection_refused"
    CONNECTION_RESET = "connection_reset"
    TLS_FAILURE = "tls_failure"
    CONNECTION_LOST = "connection_lost"
    HTTP_ERROR = "http_error"
    PROCESS_EXIT = "process_exit"


#: Transport outcomes that count as "silence after the request may have been written"
#: (docs/model.md#contract).
SILENT_TRANSPORT_OUTCOMES: frozenset[TransportOutcome] = frozenset(
    {
        TransportOutcome.CONNECTION_LOST,
        TransportOutcome.CONNECTION_RESET,
        TransportOutcome.PROCESS_EXIT,
    }
)


#: HTTP statuses that are an authorization challenge: the server answered (the transport passed)
#: and the authorization layer judges them (docs/model.md#layers). Any other error status that
#: is the whole answer to a request is the transport's failure, ``http_<status>``.
AUTH_CHALLENGE_STATUSES: frozenset[int] = frozenset({401, 403})


class AuthError(StrEnum):
    """Sanitized ``WWW-Authenticate`` error codes (RFC 6750) plus OAuth flow failures."""

    INVALID_TOKEN = "invalid_token"
    INSUFFICIENT_SCOPE = "insufficient_scope"
    OAUTH_ERROR = "oauth_error"


class Era(StrEnum):
    """How the session was negotiated."""

    INITIALIZE = "initialize"
    DISCOVER = "server/discover"


class ClientSource(StrEnum):
    """Where "what the client exposes" came from (docs/model.md#catalog)."""

    DISCOVERY_RESULT = "discovery_result"
    REGISTERED = "registered"
    DIGEST = "digest"
    #: The tool definitions the agent's own model request offered (docs/model.md#agents): the
    #: strongest evidence, ranked above ``registered``, which ranks above ``discovery_result``.
    MODEL_REQUEST = "model_request"


class LiveState(StrEnum):
    """Live state of an in-flight call, for the in-flight gauge (docs/model.md#contract)."""

    WORKING = "working"
    STALLED = "stalled"
    WAITING_FOR_USER = "waiting_for_user"


class OutcomeResult(StrEnum):
    """What an outcome verifier's receipt says."""

    PASSED = "passed"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"


#: The verdicts that exit ``0`` (``classify``, ``check``): a healthy call, a converged catalog.
GREEN: frozenset[str] = frozenset({Verdict.HEALTHY.value, CatalogVerdict.CONVERGED.value})

#: The outcome method that records the explicit per-tool policy "this tool needs no verifier".
OUTCOME_NOT_REQUIRED = "not_required"

#: Published MCP protocol versions a client supports by default (docs/model.md#contract).
DEFAULT_SUPPORTED_VERSIONS: tuple[str, ...] = (
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
)

#: JSON-RPC codes that mean the session itself is incompatible (docs/model.md#contract).
INCOMPATIBLE_SESSION_CODES: frozenset[int] = frozenset({-32022, -32021})

#: JSON-RPC "method not found": the catalog may be stale.
METHOD_NOT_FOUND = -32601

#: Default maximum catalog age of a bounded refresh policy, in seconds (docs/model.md#catalog).
DEFAULT_MAX_AGE_SECONDS = 300.0

#: The digest projection version recorded beside every digest.
DIGEST_PROJECTION = "v1"

#: The MCP methods the product keys on, spelt once (``mcp.method.name`` values).
TOOLS_CALL = "tools/call"
TOOLS_LIST = "tools/list"

#: Span clocks are integer nanoseconds.
NS_PER_S = 1_000_000_000
