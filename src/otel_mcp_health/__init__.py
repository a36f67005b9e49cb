"""otel-mcp-health: tell whether an MCP-using agent is healthy, not merely alive.

The package has three parts:

* a pure core (:mod:`otel_mcp_health.core`): evidence records, the canonical catalog digest and
  the three classifiers (catalog convergence, the five-layer call test, the session contract);
* the instrumentation (:class:`McpHealthInstrumentor`), which records small, safe evidence on
  the MCP client's spans;
* the span processor, which turns that evidence into verdicts on exported spans and metrics.

See README.md for the quick start.
"""

from __future__ import annotations

from otel_mcp_health.instrumentation import McpHealthInstrumentor, record_installed_tools
from otel_mcp_health.verifiers import (
    CallContext,
    Receipt,
    file_digest,
    from_callable,
    http_status,
    outcome_not_required,
    register_verifier,
    sqlite_row,
    unregister_verifier,
)
from otel_mcp_health.version import __version__

__all__ = [
    "CallContext",
    "McpHealthInstrumentor",
    "Receipt",
    "__version__",
    "file_digest",
    "from_callable",
    "http_status",
    "outcome_not_required",
    "record_installed_tools",
    "register_verifier",
    "sqlite_row",
    "unregister_verifier",
]
