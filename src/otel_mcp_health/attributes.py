"""Every span attribute, event and metric name the project emits: defined here, and only here.

Semantic-convention names are mirrored once (the Python semconv MCP constants live in a private,
deprecated ``_incubating`` module, so we do not import them; ``tests/test_attributes.py`` compares
these strings with ``opentelemetry.semconv`` when it is importable). Everything of ours lives under
``mcp_health.`` (never ``mcp.``: that is an OpenTelemetry namespace).

Values are small enums (see :mod:`otel_mcp_health.core.vocabulary`) or codes, never free text, so
every attribute is safe as a metric label. The dashboards, alert rules and collector config are
tested against this module: renaming a constant here fails CI until they follow.

Privacy (docs/model.md#privacy): no name here carries tool arguments, results, prompts, tokens,
headers, raw cursors or server error messages. Cursors are recorded as keyed hashes only.
"""

from __future__ import annotations

from typing import Final

# --------------------------------------------------------------------------------------------
# Semantic conventions (open-telemetry/semantic-conventions-genai docs/gen-ai/mcp.md)
# --------------------------------------------------------------------------------------------
MCP_METHOD_NAME: Final = "mcp.method.name"
MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
MCP_SESSION_ID: Final = "mcp.session.id"
JSONRPC_REQUEST_ID: Final = "jsonrpc.request.id"
RPC_RESPONSE_STATUS_CODE: Final = "rpc.response.status_code"
ERROR_TYPE: Final = "error.type"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_OPERATION_EXECUTE_TOOL: Final = "execute_tool"
GEN_AI_PROMPT_NAME: Final = "gen_ai.prompt.name"
NETWORK_TRANSPORT: Final = "network.transport"
NETWORK_PROTOCOL_NAME: Final = "network.protocol.name"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
HTTP_RESPONSE_STATUS_CODE: Final = "http.response.status_code"
#: Semconv exception event; we record only ``exception.type`` (a class name), never the message.
EXCEPTION_EVENT: Final = "exception"
EXCEPTION_TYPE: Final = "exception.type"

#: ``error.type`` value for a ``CallToolResult`` with ``isError: true`` (semconv).
ERROR_TYPE_TOOL_ERROR: Final = "tool_error"
#: ``error.type`` value for a request that hit its deadline (ours; semconv has no value).
ERROR_TYPE_TIMEOUT: Final = "timeout"

METRIC_MCP_CLIENT_OPERATION_DURATION: Final = "mcp.client.operation.duration"
METRIC_MCP_CLIENT_SESSION_DURATION: Final = "mcp.client.session.duration"
#: Semconv bucket boundaries for both MCP duration histograms (seconds).
DURATION_BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
#: Metric labels whose values a server or the network chooses, on the instrumentation's histograms
#: and the processor's counters alike (docs/attributes.md#bounds). Each side bounds these and the
#: open labels only its own metrics carry: ``instrumentation._state.OPEN_LABELS`` and
#: ``processor.metrics.OPEN_LABELS``.
OPEN_LABELS: Final = (GEN_AI_TOOL_NAME, SERVER_ADDRESS, SERVER_PORT)

# --------------------------------------------------------------------------------------------
# Evidence recorded by the instrumentation (docs/model.md#privacy)
# --------------------------------------------------------------------------------------------
#: Process-local random key shared by every span of one client session (never the server's id).
SESSION_KEY: Final = "mcp_health.session.key"
#: ``application`` or ``internal`` (a request the SDK issued by itself, e.g. an output-schema
#: refresh ``tools/list``); internal lists never count as an application's discovery.
EVIDENCE_ORIGIN: Final = "mcp_health.evidence.origin"
#: Evidence the SDK in use cannot give (a private hook is absent), ``framework_install`` when an
#: agent framework's hook point has another shape (docs/frameworks.md), or ``server_discovery``
#: on a call left unchecked because its server's discovery was forgotten (docs/model.md#scope):
#: never ``healthy``.
EVIDENCE_MISSING: Final = "mcp_health.evidence.missing"
ORIGIN_APPLICATION: Final = "application"
ORIGIN_INTERNAL: Final = "internal"

# Handshake (``initialize`` or ``server/discover`` span)
SESSION_ERA: Final = "mcp_health.session.era"
SESSION_REQUESTED_VERSION: Final = "mcp_health.session.requested_version"
SESSION_CAPABILITY_TOOLS: Final = "mcp_health.session.capability.tools"
SESSION_CAPABILITY_TOOLS_LIST_CHANGED: Final = "mcp_health.session.capability.tools_list_changed"
#: ``true`` on a ``server/discover`` probe answered with an error and followed by the session's
#: fallback handshake: one connection attempt, judged on the handshake that superseded the probe
#: (docs/model.md#handshake); the probe gets no verdict and opens no incident.
SESSION_SUPERSEDED: Final = "mcp_health.session.superseded"
#: The handshake's server name: with ``server.address`` and ``server.port`` the server's exported
#: label (docs/model.md#server-identity), on every span of the session once known and on the
#: metrics (also on a judged call whose span lacked it).
SERVER_NAME: Final = "mcp_health.server.name"
SERVER_VERSION: Final = "mcp_health.server.version"
#: Process-local keyed hash (16 hex digits, a per-process key) of the transport target: the URL's
#: scheme, host, port, path and query; the stdio command line, environment and working directory;
#: the in-process server object. On every span of the session once known; with the server name
#: and version it is the server's identity (catalogs, incidents, retry budgets;
#: docs/model.md#server-identity). The target itself never leaves the process.
SERVER_TARGET_KEY: Final = "mcp_health.server.target_key"
#: Where the session hears ``notifications/tools/list_changed`` (docs/model.md#scope): ``session``
#: (its own stream while it is open: stdio, in-process, SSE), ``http_get_stream`` (streamable
#: HTTP: the GET stream the SDK attaches after the handshake) or ``listen_stream`` (2026-07-28
#: era: a ``subscriptions/listen`` stream the client opens). Also on ``mcp_health.channel`` spans.
SESSION_NOTIFICATION_CHANNEL: Final = "mcp_health.session.notification_channel"
CHANNEL_SESSION: Final = "session"
CHANNEL_HTTP_GET_STREAM: Final = "http_get_stream"
CHANNEL_LISTEN_STREAM: Final = "listen_stream"

# ``tools/list`` page spans
CATALOG_PAGE_INDEX: Final = "mcp_health.catalog.page.index"
CATALOG_PAGE_CURSOR_HASH: Final = "mcp_health.catalog.page.cursor_hash"
CATALOG_PAGE_NEXT_CURSOR_HASH: Final = "mcp_health.catalog.page.next_cursor_hash"
CATALOG_PAGE_TOOL_COUNT: Final = "mcp_health.catalog.page.tool_count"
CATALOG_PAGE_DIGEST: Final = "mcp_health.catalog.page.digest"
#: On the page that ends a traversal: digest and size of the whole traversal's tool set.
CATALOG_DIGEST: Final = "mcp_health.catalog.digest"
CATALOG_TOOL_COUNT: Final = "mcp_health.catalog.tool_count"
CATALOG_DIGEST_PROJECTION: Final = "mcp_health.catalog.digest_projection"
#: Reason code when a digest could not be computed (e.g. ``digest_unrepresentable``).
CATALOG_DIGEST_ERROR: Final = "mcp_health.catalog.digest_error"

# Approved catalogs, on the page that ends a complete traversal when pins are configured
# (docs/evidence-format.md#pin-file): names and counts only, never a description, schema, member
# value or the pin file's path.
#: ``approved``, ``drifted`` or ``unpinned`` (``core.vocabulary.ApprovalVerdict``).
CATALOG_APPROVAL: Final = "mcp_health.catalog.approval"
#: ``pins_unreadable``, ``material_change``, ``tool_added`` (first that applies) or
#: ``no_matching_pins``; absent when ``approved`` (``core.reasons.ApprovalReason``).
CATALOG_APPROVAL_REASON: Final = "mcp_health.catalog.approval.reason"
#: How many tools changed materially, only cosmetically, were added, were removed.
CATALOG_APPROVAL_MATERIAL_COUNT: Final = "mcp_health.catalog.approval.material_count"
CATALOG_APPROVAL_COSMETIC_COUNT: Final = "mcp_health.catalog.approval.cosmetic_count"
CATALOG_APPROVAL_ADDED_COUNT: Final = "mcp_health.catalog.approval.added_count"
CATALOG_APPROVAL_REMOVED_COUNT: Final = "mcp_health.catalog.approval.removed_count"
#: The names of those tools (sorted, at most 64 each).
CATALOG_APPROVAL_MATERIAL_TOOLS: Final = "mcp_health.catalog.approval.material_tools"
CATALOG_APPROVAL_COSMETIC_TOOLS: Final = "mcp_health.catalog.approval.cosmetic_tools"
CATALOG_APPROVAL_ADDED_TOOLS: Final = "mcp_health.catalog.approval.added_tools"
CATALOG_APPROVAL_REMOVED_TOOLS: Final = "mcp_health.catalog.approval.removed_tools"
#: ``true`` when a list of tool names was cut at 64.
CATALOG_APPROVAL_TOOLS_TRUNCATED: Final = "mcp_health.catalog.approval.tools_truncated"
#: The projected member names that differ in any tool (sorted), e.g. ``description``.
CATALOG_APPROVAL_CHANGED_MEMBERS: Final = "mcp_health.catalog.approval.changed_members"
#: The material member names (sorted) never compared for at least one listed tool, because its
#: pin is partial (made from an MCPB manifest): e.g. ``inputSchema``; absent with full pins.
CATALOG_APPROVAL_UNCOMPARED_MEMBERS: Final = "mcp_health.catalog.approval.uncompared_members"

# ``notifications/tools/list_changed`` spans (arrival time = span start time)
NOTIFICATION_SPAN_METHOD: Final = "notifications/tools/list_changed"

# Installed tools reported through ``record_installed_tools`` (span ``mcp_health.install``)
INSTALL_SPAN_NAME: Final = "mcp_health.install"
CATALOG_CLIENT_DIGEST: Final = "mcp_health.catalog.client_digest"
CATALOG_CLIENT_SOURCE: Final = "mcp_health.catalog.client_source"
CATALOG_CLIENT_TOOL_COUNT: Final = "mcp_health.catalog.client_tool_count"
#: The install compared tool by tool with the discovery whose digest and size are on the same span
#: (``mcp_health.catalog.digest``, ``mcp_health.catalog.tool_count``): the installed tools whose
#: definition differs from the discovered one of that name, and those the discovery does not list
#: (names only, at most 16, docs/model.md#catalog).
CATALOG_INSTALL_CHANGED: Final = "mcp_health.catalog.install.changed_tools"
CATALOG_INSTALL_UNLISTED: Final = "mcp_health.catalog.install.unlisted_tools"

# ``tools/call`` spans: the agent whose model request offered the called tool
# (docs/model.md#agents). An agent label is ``<api>/<slot>`` (e.g. ``openai.chat/0``): the LLM
# API and a small reused integer, so its distinct values stay bounded.
AGENT_LABEL: Final = "mcp_health.agent.label"
#: ``true`` when the call ran in the context of that agent's latest model request; ``false``
#: when it could not be tied to one agent and was judged against every agent offering the tool.
AGENT_TIED: Final = "mcp_health.agent.tied"
#: What that agent's model was offered from the call's server, compared tool by tool with the
#: server's latest complete discovery (digest and size below): how many of its MCP tools were
#: offered, the offered tools whose definition differs (and the member names that differ, e.g.
#: ``description``), those the discovery does not list (names only, at most 16 each), and
#: whether the offered set is exactly an earlier complete discovery's catalog.
OFFERED_TOOL_COUNT: Final = "mcp_health.offered.tool_count"
OFFERED_DISCOVERED_TOOL_COUNT: Final = "mcp_health.offered.discovered_tool_count"
OFFERED_DISCOVERY_DIGEST: Final = "mcp_health.offered.discovery_digest"
OFFERED_CHANGED: Final = "mcp_health.offered.changed_tools"
OFFERED_UNLISTED: Final = "mcp_health.offered.unlisted_tools"
OFFERED_CHANGED_MEMBERS: Final = "mcp_health.offered.changed_members"
OFFERED_EARLIER_CATALOG: Final = "mcp_health.offered.earlier_catalog"

# ``tools/call`` spans: per-layer evidence
TRANSPORT_OUTCOME: Final = "mcp_health.transport.outcome"
TRANSPORT_REQUEST_WRITTEN: Final = "mcp_health.transport.request_written"
AUTH_ERROR: Final = "mcp_health.auth.error"
AUTH_REQUIRED_SCOPES: Final = "mcp_health.auth.required_scopes"
PROTOCOL_RESULT_VALID: Final = "mcp_health.protocol.result_valid"
#: Metric label of ``mcp_health.outcomes``: a JSON-RPC result envelope arrived (``isError`` or
#: not), i.e. the call counts towards protocol-level success (docs/model.md#layers).
PROTOCOL_ENVELOPE: Final = "mcp_health.protocol.envelope"
CALL_IS_ERROR: Final = "mcp_health.call.is_error"
CALL_TIMED_OUT: Final = "mcp_health.call.timed_out"
#: The host cancelled the request (``asyncio.wait_for``, an anyio cancel scope). After a possible
#: write this is silence, recorded with ``mcp_health.call.timed_out`` (the host's deadline passed);
#: before the write it is no call (``mcp_health.transport.request_written = false``, no verdict).
CALL_CANCELLED: Final = "mcp_health.call.cancelled"
CALL_OUTPUT_SCHEMA_VALID: Final = "mcp_health.call.output_schema_valid"
CALL_DEADLINE_S: Final = "mcp_health.call.deadline_s"
CALL_IDLE_WINDOW_S: Final = "mcp_health.call.idle_window_s"
TOOL_READ_ONLY: Final = "mcp_health.tool.read_only"
#: ``True`` on an open ``tools/call`` span while the call waits on a person (elicitation,
#: input-required rounds, an authorization flow); the in-flight gauge reports ``waiting_for_user``
#: instead of judging the two clocks (docs/model.md#layers: waiting is not stuck). Cleared
#: (``False``) after.
CALL_WAITING_FOR_USER: Final = "mcp_health.call.waiting_for_user"
#: Call-time contract check (docs/model.md#catalog): ``ok``, ``unknown_tool``,
#: ``missing_required_argument`` (names only, never values).
CALL_CONTRACT: Final = "mcp_health.call.contract"
CALL_MISSING_ARGUMENTS: Final = "mcp_health.call.missing_arguments"
CONTRACT_OK: Final = "ok"
CONTRACT_UNKNOWN_TOOL: Final = "unknown_tool"
CONTRACT_MISSING_REQUIRED_ARGUMENT: Final = "missing_required_argument"
#: On a ``tools/call`` span of a server covered by pins: ``approved``, ``unapproved`` or
#: ``unpinned`` (``core.vocabulary.CallApproval``), judged against the server's last complete
#: discovery like the contract check.
CALL_APPROVAL: Final = "mcp_health.call.approval"
#: With ``unapproved``: ``tool_unapproved`` (added or changed materially since it was pinned) or
#: ``pins_unreadable`` (the pin file could not be read: fail closed).
CALL_APPROVAL_REASON: Final = "mcp_health.call.approval.reason"
#: ``true`` with ``approved`` when the tool's pin is partial: some material member of its
#: definition (e.g. ``inputSchema``) was never compared; absent otherwise.
CALL_APPROVAL_PARTIAL: Final = "mcp_health.call.approval.partial"

# Progress notifications: one span event per notification (values and token match only)
PROGRESS_EVENT: Final = "mcp_health.progress"
PROGRESS_VALUE: Final = "mcp_health.progress.value"
PROGRESS_TOTAL: Final = "mcp_health.progress.total"
PROGRESS_TOKEN_MATCH: Final = "mcp_health.progress.token_match"
# Progress summary on the finished call span
PROGRESS_COUNT: Final = "mcp_health.progress.count"
PROGRESS_VALID_COUNT: Final = "mcp_health.progress.valid_count"
PROGRESS_MONOTONIC: Final = "mcp_health.progress.monotonic"
PROGRESS_MAX_GAP_S: Final = "mcp_health.progress.max_gap_s"
PROGRESS_LATE_COUNT: Final = "mcp_health.progress.late_count"
PROGRESS_WRONG_TOKEN_COUNT: Final = "mcp_health.progress.wrong_token_count"

# Outcome receipts (outcome verifiers)
OUTCOME_METHOD: Final = "mcp_health.outcome.method"
OUTCOME_RESULT: Final = "mcp_health.outcome.result"
OUTCOME_CONFIDENCE: Final = "mcp_health.outcome.confidence"
OUTCOME_DURATION_S: Final = "mcp_health.outcome.duration_s"
#: Short code of a failed or inconclusive receipt (``file_absent``, ``verifier_timeout``...).
OUTCOME_REASON: Final = "mcp_health.outcome.reason"
#: INTERNAL span with the receipt of a borrowed call span (another library's, ended before the
#: verifier answered): ``SESSION_KEY`` and the receipt, linked to the call's span.
OUTCOME_SPAN_NAME: Final = "mcp_health.outcome"
#: On a borrowed call span: its receipt comes later, on an ``mcp_health.outcome`` span.
OUTCOME_PENDING: Final = "mcp_health.receipt.pending"
# Reconciliation after silence (docs/model.md#silence): was the side effect committed at the
# destination?
#: ``True`` = committed, ``False`` = confirmed absent; on a ``tools/call`` span of the same tool.
EFFECT_OBSERVED: Final = "mcp_health.effect.observed"
#: ``destination_query`` or ``idempotency_key``.
EFFECT_METHOD: Final = "mcp_health.effect.method"
#: INTERNAL span emitted by ``report_reconciliation``: ``SESSION_KEY``, ``GEN_AI_TOOL_NAME``,
#: ``EFFECT_OBSERVED``/``EFFECT_METHOD`` (and a receipt), linked to the silent call's span.
RECONCILE_SPAN_NAME: Final = "mcp_health.reconcile"

# Session end: an INTERNAL span (``SESSION_KEY`` set) that tells the processor to release the
# session's state at once instead of waiting for idle expiry.
SESSION_END_SPAN_NAME: Final = "mcp_health.session.end"

# SSE connect refused: a CLIENT span (its own ``SESSION_KEY``, the connection and the HTTP
# evidence of the connecting GET) for an SSE server that refused the GET before any session or
# handshake existed (401/403, an error status, an answer that is no event stream, a transport
# failure). Judged like a handshake.
CONNECT_SPAN_NAME: Final = "mcp_health.connect"

# Notification channel: an INTERNAL span (``SESSION_KEY``, ``SESSION_NOTIFICATION_CHANNEL``,
# ``CHANNEL_OPEN``) each time a session's GET stream or ``subscriptions/listen`` stream attaches
# (``true``) or ends (``false``), or its own stream (``session``) ends while it is open: only a
# session whose channel is alive hears ``list_changed``.
CHANNEL_SPAN_NAME: Final = "mcp_health.channel"
CHANNEL_OPEN: Final = "mcp_health.channel.open"

# --------------------------------------------------------------------------------------------
# Verdicts derived by the span processor (docs/model.md)
# --------------------------------------------------------------------------------------------
CATALOG_VERDICT: Final = "mcp_health.catalog.verdict"
CATALOG_REASON: Final = "mcp_health.catalog.reason"
CATALOG_MAX_AGE_S: Final = "mcp_health.catalog.max_age_s"
#: ``registered`` on a call judged on its agent's model request (``client_source =
#: model_request``) whose session also has a reported install that reads otherwise: the model
#: request won (docs/model.md#agents).
CATALOG_OVERRULED_SOURCE: Final = "mcp_health.catalog.overruled_source"
#: ``true`` on a call whose session made no discovery of its own: judged against the last
#: complete discovery of the same server in this process (docs/model.md#scope).
CATALOG_INHERITED: Final = "mcp_health.catalog.inherited"
#: Seconds since that inherited discovery completed, at the end of the call.
CATALOG_INHERITED_AGE_S: Final = "mcp_health.catalog.inherited_age_s"
CALL_FIRST_FAILED_LAYER: Final = "mcp_health.call.first_failed_layer"
CALL_REASON: Final = "mcp_health.call.reason"
#: Prefix of the five per-layer status attributes: ``mcp_health.layer.transport`` ...
LAYER_PREFIX: Final = "mcp_health.layer."
VERDICT: Final = "mcp_health.verdict"
NEXT_ACTION: Final = "mcp_health.next_action"
REASON: Final = "mcp_health.reason"
EFFECT_UNKNOWN: Final = "mcp_health.effect.unknown"
INCIDENT_KEY: Final = "mcp_health.incident.key"
#: How many failures this incident has seen so far, this one included (1 = it just opened).
INCIDENT_ATTEMPT: Final = "mcp_health.incident.attempt"
#: The attempt is beyond the failed layer's retry budget (docs/model.md#incidents;
#: ``core/retries.py``).
RETRY_OVER_BUDGET: Final = "mcp_health.retry.over_budget"
RETRY_UNRECONCILED: Final = "mcp_health.retry.unreconciled"
LIVE_STATE: Final = "mcp_health.live_state"
#: On a span that judges the catalog (the page that ends a traversal, ``list_changed``,
#: ``mcp_health.install``): the session's readiness without a call (docs/model.md#without-a-call):
#: the verdict of its handshake when that was answered but unhealthy (``incompatible_session``),
#: else as the catalog decides it: ``converged``, else ``stale_catalog`` with reason
#: ``catalog_<catalog reason>`` and the catalog's next action. A failed handshake's own
#: ``mcp_health.verdict`` is on its span (no catalog is judged after it).
READINESS_VERDICT: Final = "mcp_health.readiness.verdict"
READINESS_REASON: Final = "mcp_health.readiness.reason"
READINESS_NEXT_ACTION: Final = "mcp_health.readiness.next_action"

# ``otel-mcp-health probe`` (docs/probe.md): the root span of one probe (its trace holds the
# product's own judged spans), and the configured target and module it probed (never a URL)
PROBE_SPAN_NAME: Final = "mcp_health.probe"
PROBE_TARGET: Final = "mcp_health.probe.target"
PROBE_MODULE: Final = "mcp_health.probe.module"

# --------------------------------------------------------------------------------------------
# Metrics (OTel naming: no ``_total``; pluralised only for ``{...}`` count units)
# --------------------------------------------------------------------------------------------
METRIC_CALLS: Final = "mcp_health.calls"
METRIC_CATALOG_VERDICTS: Final = "mcp_health.catalog.verdicts"
METRIC_CONVERGENCE_LAG: Final = "mcp_health.catalog.convergence_lag"
METRIC_CALLS_IN_FLIGHT: Final = "mcp_health.calls.in_flight"
METRIC_INCIDENTS: Final = "mcp_health.incidents"
METRIC_OUTCOMES: Final = "mcp_health.outcomes"
METRIC_CATALOG_APPROVALS: Final = "mcp_health.catalog.approvals"
#: The probe's families (docs/probe.md), named as Prometheus reads them: ``/probe`` answers them
#: as text, and scheduled mode exports gauges of the same names over OTLP.
METRIC_PROBE_SUCCESS: Final = "probe_success"
METRIC_PROBE_DURATION: Final = "probe_duration_seconds"
METRIC_PROBE_PHASE_DURATION: Final = "mcp_health_probe_phase_duration_seconds"
METRIC_PROBE_VERDICT: Final = "mcp_health_probe_verdict"
METRIC_PROBE_SESSION_VERDICT: Final = "mcp_health_probe_session_verdict"
METRIC_PROBE_CATALOG_VERDICT: Final = "mcp_health_probe_catalog_verdict"
METRIC_PROBE_CATALOG_APPROVAL: Final = "mcp_health_probe_catalog_approval"
METRIC_PROBE_CATALOG_TOOLS: Final = "mcp_health_probe_catalog_tools"
METRIC_PROBE_CATALOG_PAGES: Final = "mcp_health_probe_catalog_pages"
METRIC_PROBE_CATALOG_INFO: Final = "mcp_health_probe_catalog_info"
METRIC_PROBE_CALL_VERDICT: Final = "mcp_health_probe_call_verdict"
METRIC_PROBE_REQUESTS: Final = "mcp_health_probe_requests"
METRIC_PROBE_CACHED: Final = "mcp_health_probe_cached"
METRIC_PROBE_AGE: Final = "mcp_health_probe_age_seconds"
#: The prober's own (``/metrics``).
METRIC_PROBER_PROBES: Final = "mcp_health_prober_probes_total"
METRIC_PROBER_SCRAPES: Final = "mcp_health_prober_scrapes_total"
METRIC_PROBER_REFUSED: Final = "mcp_health_prober_refused_total"
METRIC_PROBER_IN_FLIGHT: Final = "mcp_health_prober_probes_in_flight"


def layer_attribute(layer: str) -> str:
    """Return the status attribute name of one call layer, e.g. ``mcp_health.layer.outcome``."""
    return LAYER_PREFIX + layer
