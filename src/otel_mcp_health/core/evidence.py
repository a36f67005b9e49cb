"""The evidence model: immutable records of what was observed, and nothing else.

Evidence and judgement stay apart. These records say what the instrumentation (or an offline
``.jsonl`` file, see ``docs/evidence-format.md``) observed; the classifiers in :mod:`.catalog`,
:mod:`.calls` and :mod:`.session` turn them into verdicts. The same records come from spans (the
processor) and from files (``otel-mcp-health classify``), so both paths share one set of rules.

Conventions:

* ``None`` always means *not observed*, never *passed*. The one place where "absent" and
  "null" differ is a call's authorization section: absent = not observed, ``null`` = not
  applicable (stdio). That third state is the :data:`NOT_APPLICABLE` sentinel.
* Times are ``int`` nanoseconds since the Unix epoch, passed in, never read from a clock.
* Cursors are opaque keys compared only for equality: raw cursors in offline files, keyed hashes
  on spans. Tool definitions are JSON-shaped mappings with wire (camelCase) member names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

from otel_mcp_health.core.traversal import ChainSummary
from otel_mcp_health.core.vocabulary import (
    AuthError,
    CatalogVerdict,
    TransportOutcome,
)

JsonObject = Mapping[str, Any]


class _NotApplicable(Enum):
    """A layer that has no exchange to observe (authorization on stdio)."""

    NOT_APPLICABLE = "not_applicable"


#: Sentinel for "this layer does not exist on this transport"
#: (docs/evidence-format.md: ``"authorization": null``).
NOT_APPLICABLE: Final = _NotApplicable.NOT_APPLICABLE
NotApplicable = _NotApplicable


# ----------------------------------------------------------------------------------------------
# Catalog (docs/model.md#catalog)
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """One ``tools/list`` response page of a traversal.

    ``tools`` is ``None`` when only digests were kept. ``failed`` marks a page whose request got
    a JSON-RPC error (``error_code`` when known) instead of a result.
    """

    cursor: str | None = None
    next_cursor: str | None = None
    tools: tuple[JsonObject, ...] | None = None
    failed: bool = False
    error_code: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Discovery:
    """A ``tools/list`` traversal: pages from the first request (no cursor) onwards.

    ``digest`` is the projection-v1 digest of the complete tool set when the recorder kept only
    digests; ``digest_error`` is the reason code when the recorder could not compute one.
    """

    started_at: int | None = None
    completed_at: int | None = None
    pages: tuple[Page, ...] = ()
    digest: str | None = None
    digest_error: str | None = None
    #: The chain already walked page by page (live state keeps this, not the pages).
    chain: ChainSummary | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshPolicy:
    """A bounded refresh policy for servers that do not advertise ``tools.listChanged``."""

    max_age_seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallCheck:
    """A tool the agent called, for the call-time contract check (docs/model.md#catalog, rules 7-8).

    Either ``argument_names`` (the classifier checks them against the discovered
    ``inputSchema``) or a precomputed finding (``contract`` and ``missing``) recorded by the
    instrumentation, which checks in memory and keeps only names.
    """

    name: str
    argument_names: tuple[str, ...] | None = None
    contract: str | None = None
    missing: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class InstallCheck:
    """An install compared tool by tool with a discovery (docs/model.md#catalog): how many tools
    each side has, the installed tools whose definition differs from the discovered one of the
    same name (``changed``) or that the discovery does not list (``unlisted``), names only, and
    the catalog digest of the discovery it was compared with."""

    installed: int
    discovered: int
    changed: tuple[str, ...] = ()
    unlisted: tuple[str, ...] = ()
    discovery_digest: str | None = None
    #: Which members of the changed tools differ (``description``, ``inputSchema``), when the
    #: install was read from a model request (docs/model.md#agents).
    changed_members: tuple[str, ...] = ()
    #: The install is exactly an earlier complete discovery of the server, not the latest one.
    earlier_catalog: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogEvidence:
    """Everything the catalog rules need to judge catalog convergence for one session."""

    list_changed: bool | None = None
    refresh_policy: RefreshPolicy | None = None
    now: int | None = None
    notifications: tuple[int, ...] = ()
    discoveries: tuple[Discovery, ...] = ()
    client_tools: tuple[JsonObject, ...] | None = None
    client_digest: str | None = None
    #: Why the digest of what the client exposes could not be computed (a reported install).
    client_digest_error: str | None = None
    #: A reported install already compared with a discovery (an ``mcp_health.install`` span).
    install: InstallCheck | None = None
    #: What the calling agent's own model request offered, compared with the server's
    #: discoveries (docs/model.md#agents). When present it is the install the catalog is judged
    #: on, whatever else was reported (``client_source = model_request``).
    offered: InstallCheck | None = None
    tool_calls: tuple[ToolCallCheck, ...] = ()


# ----------------------------------------------------------------------------------------------
# Call (docs/model.md#layers)
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class TransportEvidence:
    """How the request fared on the wire. ``request_written=None`` means unknown."""

    outcome: TransportOutcome
    http_status: int | None = None
    request_written: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthorizationEvidence:
    """The HTTP authorization exchange: status, sanitized RFC 6750 error code, scope names."""

    http_status: int | None = None
    error: AuthError | None = None
    scope: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtocolEvidence:
    """The JSON-RPC exchange: an error code, or ``None`` for a result envelope."""

    error_code: int | None = None
    result_valid: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionEvidence:
    """The tool's own verdict: ``isError``, deadline, output-schema check (None = no schema)."""

    is_error: bool | None = None
    timed_out: bool = False
    output_schema_valid: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EffectEvidence:
    """Reconciliation after silence: was the side effect committed at the destination?"""

    observed: bool
    method: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OutcomeEvidence:
    """An outcome verifier's receipt. ``passed=None`` is an inconclusive receipt."""

    method: str
    passed: bool | None
    confidence: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CallEvidence:
    """One tool-call attempt, layer by layer (docs/evidence-format.md ``kind: "call"``)."""

    tool: str | None = None
    read_only: bool | None = None
    transport: TransportEvidence | None = None
    authorization: AuthorizationEvidence | NotApplicable | None = None
    protocol: ProtocolEvidence | None = None
    execution: ExecutionEvidence | None = None
    effect: EffectEvidence | None = None
    outcome: OutcomeEvidence | None = None
    #: Evidence the recorder could not gather (an SDK without a hook it needs): never healthy.
    missing: tuple[str, ...] = ()
    #: Why the called tool's current definition is not the approved one (``tool_unapproved``,
    #: ``pins_unreadable``; docs/model.md#approval), or ``None``: approved or no pins.
    unapproved: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestEvidence:
    """One request as it ended: its exchange layers (for a ``tools/call``, its ``call`` record;
    other methods fill the transport to execution layers only) and what a call record has no
    field for: the JSON-RPC id, a write seen without a transport outcome, the host's
    cancellation and the error class (``error.type``)."""

    call: CallEvidence
    request_id: str | None = None
    #: Whether the request was written, when no transport outcome holds it (``call.transport``).
    request_written: bool | None = None
    cancelled: bool = False
    error_type: str | None = None


# ----------------------------------------------------------------------------------------------
# Session (docs/model.md#contract)
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class HandshakeEvidence:
    """The ``initialize`` / ``server/discover`` exchange.

    ``capabilities`` is the server's capability object (``{"tools": {"listChanged": true}}``);
    ``None`` = not observed. ``transport``/``authorization`` carry a failed handshake's evidence.
    """

    requested_version: str | None = None
    negotiated_version: str | None = None
    error_code: int | None = None
    capabilities: JsonObject | None = None
    supported_versions: tuple[str, ...] | None = None
    transport: TransportEvidence | None = None
    authorization: AuthorizationEvidence | NotApplicable | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressEvent:
    """One ``notifications/progress`` for a request: token and values only, never the message."""

    at: int
    token: str | None
    progress: float
    total: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressEvidence:
    """A request's clocks: the idle window (reset by valid progress) and the absolute deadline.

    ``completed_at`` is when the terminal response arrived (progress after it is late).
    """

    now: int | None = None
    started_at: int | None = None
    completed_at: int | None = None
    in_flight: bool = False
    idle_window_seconds: float | None = None
    deadline_seconds: float | None = None
    request_token: str | None = None
    events: tuple[ProgressEvent, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEvidence:
    """One session's chain of evidence: handshake, catalog, call, progress (docs/model.md#contract).

    ``catalog_verdict`` is a verdict given instead of catalog evidence (``{"verdict": ...}``).
    """

    handshake: HandshakeEvidence | None = None
    catalog: CatalogEvidence | None = None
    catalog_verdict: CatalogVerdict | None = None
    call: CallEvidence | None = None
    progress: ProgressEvidence | None = None


# ----------------------------------------------------------------------------------------------
# Records (one line of an evidence file)
# ----------------------------------------------------------------------------------------------
Evidence = CatalogEvidence | CallEvidence | SessionEvidence


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """An identified piece of evidence (``id`` and ``kind`` from the file) plus optional extras.

    ``expect`` is this project's optional ``"expect"`` member (expected verdict fields), used by
    the seed fixtures so that a replay can show whether each verdict is the one the seed names.
    """

    id: str
    evidence: Evidence
    expect: Mapping[str, str] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """``catalog``, ``call`` or ``session``."""
        if isinstance(self.evidence, CatalogEvidence):
            return "catalog"
        if isinstance(self.evidence, CallEvidence):
            return "call"
        return "session"
