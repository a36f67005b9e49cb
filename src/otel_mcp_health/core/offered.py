"""What a model was offered: tool definitions read from an LLM API request (docs/model.md#agents).

Agent frameworks hand their model the MCP tools they converted, often rewritten (a prefix on the
name, a strict-mode schema, titles dropped). This module holds the offered definition as read from
the request and, in the pure core, maps it back to the MCP tool it came from and compares it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class OfferedTool:
    """One tool definition a request offered its model, as the request carried it: its name,
    its description and its parameter schema (any JSON value: attacker-shaped input is kept
    as is and judged later, never trusted). Kept in memory only, never exported."""

    name: str
    description: str | None = None
    parameters: Any = None


__all__ = ["OfferedTool"]
