"""otel-mcp-health: tell whether an MCP-using agent is healthy, not merely alive.

The package has three parts:

* a pure core (:mod:`otel_mcp_health.core`): evidence records, the canonical catalog digest and
  the three classifiers (catalog convergence, the five-layer call test, the session contract);
* the instrumentation (:class:`McpHealthInstrumentor`), which records small, safe evidence on
  the MCP client's spans, and the outcome verifiers (:func:`register_verifier`);
* the span processor, which turns that evidence into verdicts on exported spans and metrics.

The public names below are imported lazily (PEP 562), so ``import otel_mcp_health.core`` never
loads OpenTelemetry: the core stays usable, and testable, on its own. See README.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from otel_mcp_health.version import __version__

if TYPE_CHECKING:
    from otel_mcp_health.instrumentation import (
        McpHealthInstrumentor,
        flush_receipts,
        record_installed_tools,
        report_reconciliation,
    )
    from otel_mcp_health.processor import McpHealthSpanProcessor
    from otel_mcp_health.verifiers import (
        CallContext,
        OutcomePolicy,
        OutcomePolicyError,
        Receipt,
        file_digest,
        from_callable,
        http_status,
        outcome_not_required,
        register_verifier,
        sqlite_row,
        unregister_verifier,
    )

#: Public name → module that defines it.
_EXPORTS: dict[str, str] = {
    "McpHealthInstrumentor": "otel_mcp_health.instrumentation",
    "record_installed_tools": "otel_mcp_health.instrumentation",
    "flush_receipts": "otel_mcp_health.instrumentation",
    "report_reconciliation": "otel_mcp_health.instrumentation",
    "McpHealthSpanProcessor": "otel_mcp_health.processor",
    "CallContext": "otel_mcp_health.verifiers",
    "OutcomePolicy": "otel_mcp_health.verifiers",
    "OutcomePolicyError": "otel_mcp_health.verifiers",
    "Receipt": "otel_mcp_health.verifiers",
    "file_digest": "otel_mcp_health.verifiers",
    "from_callable": "otel_mcp_health.verifiers",
    "http_status": "otel_mcp_health.verifiers",
    "outcome_not_required": "otel_mcp_health.verifiers",
    "register_verifier": "otel_mcp_health.verifiers",
    "sqlite_row": "otel_mcp_health.verifiers",
    "unregister_verifier": "otel_mcp_health.verifiers",
}

__all__ = [
    "CallContext",
    "McpHealthInstrumentor",
    "McpHealthSpanProcessor",
    "OutcomePolicy",
    "OutcomePolicyError",
    "Receipt",
    "__version__",
    "file_digest",
    "flush_receipts",
    "from_callable",
    "http_status",
    "outcome_not_required",
    "record_installed_tools",
    "register_verifier",
    "report_reconciliation",
    "sqlite_row",
    "unregister_verifier",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        msg = f"module 'otel_mcp_health' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
