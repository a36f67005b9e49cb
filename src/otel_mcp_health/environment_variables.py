"""Environment variables read by the ``mcp_health`` instrumentation (private to this package).

Registered under the ``opentelemetry_environment_variables`` entry point, so
``opentelemetry-instrument --help`` lists them. Every variable is optional; the defaults are what an
SRE would pick for agents in production.
"""

from __future__ import annotations

from typing import Final

OTEL_INSTRUMENTATION_MCP_HEALTH_IDLE_WINDOW_S: Final = (
    "OTEL_INSTRUMENTATION_MCP_HEALTH_IDLE_WINDOW_S"
)
"""
.. envvar:: OTEL_INSTRUMENTATION_MCP_HEALTH_IDLE_WINDOW_S

Idle window of a ``tools/call``, in seconds (docs/model.md#verdicts, the clock that valid progress
resets). It is recorded on every ``tools/call`` span as ``mcp_health.call.idle_window_s`` so the
span processor judges each call against the window that was configured when it ran. Default:
``30``. A value that is not a positive number is ignored (the default applies).
"""

OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_DIGEST: Final = (
    "OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_DIGEST"
)
"""
.. envvar:: OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_DIGEST

``true`` (default) computes the canonical digest of every ``tools/list`` page and of every
completed traversal. ``false`` skips the digests (cursor-chain facts and tool counts are still
recorded). Without digests no catalog can be shown to match what the client exposes, so every
catalog verdict becomes ``unverifiable`` (``digest_unavailable``) and every call at best
``stale_catalog``: missing evidence is never green. Use it only to measure the digest's cost.
"""

DEFAULT_IDLE_WINDOW_S: Final = 30.0
"""Default of :envvar:`OTEL_INSTRUMENTATION_MCP_HEALTH_IDLE_WINDOW_S`."""

OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_PAGES: Final = "OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_PAGES"
"""
.. envvar:: OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_PAGES

Most pages of one ``tools/list`` traversal that are walked (the instrumentation and the processor
read the same value; the processor also takes ``max_pages=``). Default: ``1000``. Consequence: a
catalog served in more pages is judged ``incomplete`` (``cursor_remaining``), never green. State
per session holds one 8-byte cursor hash per page of each traversal in progress (at most 8 at
once: docs/model.md#concurrent-traversals), so the cap bounds it (8 KiB a traversal at the
default); completed traversals keep no per-page state (docs/configuration.md).
"""

OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES: Final = "OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES"
"""
.. envvar:: OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES

Path of an outcome policy, a TOML file of ``[[outcome]]`` tables that choose each tool's outcome
verifier without code (docs/outcomes.md): ``not_required``, a file, an HTTP status, a sqlite row,
a Python function or a packaged verifier (entry-point group ``otel_mcp_health.verifiers``). Read
when the instrumentor instruments; tools registered in code keep their own verifier. Default:
unset (no policy). A file that cannot be read, does not parse or has a bad entry is refused with
one warning (file, entry, key; never a value) and installs no verifier: its tools read
``unverified``, never green. ``otel-mcp-health outcomes FILE`` checks a policy offline.
"""

OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG: Final = (
    "OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG"
)
"""
.. envvar:: OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG

Path of an approved catalog, the pin file ``otel-mcp-health pin`` writes (docs/approval.md):
per server the digests of the tools a person reviewed. Read once, when the instrumentor
instruments (a change to the file is seen at the next start; the instrument keyword argument
``approved_catalog=`` wins over it). Every complete discovery of a server the file covers is
compared with its pins and its last page's span carries ``mcp_health.catalog.approval``; a
``tools/call`` of a tool added or materially changed since reads ``stale_catalog`` /
``tool_unapproved`` / ``review_catalog_change`` (docs/model.md#approval). Default: unset (no
approval judged). A file that cannot be read or parsed is one warning naming it (local stderr,
never exported) and fails closed: every discovery reads ``drifted`` / ``pins_unreadable``, every
call of its servers ``stale_catalog`` / ``pins_unreadable``. The path is never exported.
"""

# ==============================================================================================
# Span processor (McpHealthSpanProcessor, McpHealthConfigurator). Append-only section owned by
# the processor; each option can also be passed as a keyword argument, which wins over the env.
# ==============================================================================================

OTEL_INSTRUMENTATION_MCP_HEALTH_PROCESSOR_ENABLED: Final = (
    "OTEL_INSTRUMENTATION_MCP_HEALTH_PROCESSOR_ENABLED"
)
"""
.. envvar:: OTEL_INSTRUMENTATION_MCP_HEALTH_PROCESSOR_ENABLED

``true`` (default) derives verdicts on MCP spans. ``false`` turns the processor into a pure
pass-through: every span reaches the exporter untouched and no verdict metric is recorded. With
``OTEL_PYTHON_CONFIGURATOR=mcp_health`` the exporting processor is still wrapped, so this is the
switch to turn verdicts off without changing the deployment.
"""

OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_SESSIONS: Final = "OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_SESSIONS"
"""
.. envvar:: OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_SESSIONS

Most client sessions whose state the processor keeps at once (least recently used evicted first).
Default: ``10000``. Each session holds a few small records (see
``otel_mcp_health.processor._sessions``).
A session evicted while still active loses its history, and its next calls are judged on missing
evidence, which is never green.
"""

OTEL_INSTRUMENTATION_MCP_HEALTH_SESSION_IDLE_S: Final = (
    "OTEL_INSTRUMENTATION_MCP_HEALTH_SESSION_IDLE_S"
)
"""
.. envvar:: OTEL_INSTRUMENTATION_MCP_HEALTH_SESSION_IDLE_S

Seconds after which a session with no new span is forgotten. Default: ``3600``. Sessions are also
released at once when their ``mcp_health.session.end`` span arrives.
"""

OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S: Final = (
    "OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S"
)
"""
.. envvar:: OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S

Maximum age, in seconds, of the last complete ``tools/list`` traversal for a server that does not
advertise ``tools.listChanged`` (docs/model.md#catalog, the bounded refresh policy). Default:
``300``. Recorded on every judged span as ``mcp_health.catalog.max_age_s``.
"""

OTEL_INSTRUMENTATION_MCP_HEALTH_SUPPORTED_VERSIONS: Final = (
    "OTEL_INSTRUMENTATION_MCP_HEALTH_SUPPORTED_VERSIONS"
)
"""
.. envvar:: OTEL_INSTRUMENTATION_MCP_HEALTH_SUPPORTED_VERSIONS

Comma-separated MCP protocol versions the client run supports (docs/model.md#verdicts). A session
that negotiated another version is ``incompatible_session``. Default: the published versions
``2024-11-05,2025-03-26,2025-06-18,2025-11-25,2026-07-28``.
"""

DEFAULT_MAX_SESSIONS: Final = 10_000
"""Default of :envvar:`OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_SESSIONS`."""

DEFAULT_SESSION_IDLE_S: Final = 3600.0
"""Default of :envvar:`OTEL_INSTRUMENTATION_MCP_HEALTH_SESSION_IDLE_S`."""
