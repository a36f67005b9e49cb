"""The processor half: verdicts derived from the evidence the instrumentation records.

``McpHealthSpanProcessor`` (:mod:`._processor`) recognises the MCP spans, feeds the incremental
engine (:mod:`._engine`) and hands the exporter enriched copies; ``HealthMetrics``
(:mod:`.metrics`) is the verdict metrics. The path of a span is drawn in docs/architecture.md.
"""

from __future__ import annotations

from otel_mcp_health.processor._processor import McpHealthSpanProcessor

__all__ = ["McpHealthSpanProcessor"]
