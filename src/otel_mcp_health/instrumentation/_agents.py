"""Installs per agent, read from the model's own request (docs/model.md#agents). Placeholder."""

from __future__ import annotations

from collections.abc import Sequence

from otel_mcp_health.core.offered import OfferedTool


def record_model_request(api: str, tools: Sequence[OfferedTool]) -> None:
    """Record that a model request of ``api`` offered ``tools``. Never raises."""
    del api, tools
