"""Hooks on the LLM client libraries agents use: what each request offers its model. Placeholder."""

from __future__ import annotations

from otel_mcp_health.frameworks import Framework

#: Every LLM client library hooked, in the order they are registered.
MODEL_CLIENTS: tuple[Framework, ...] = ()

__all__ = ["MODEL_CLIENTS"]
