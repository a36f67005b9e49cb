"""What every framework hook reports through: the instrumentation's install record (private)."""

from __future__ import annotations

import logging
from typing import Any

_logger = logging.getLogger(__name__)


def report_install(source: Any, tools: list[Any]) -> None:
    """Record that a framework hands these MCP tool definitions to its model.

    ``source``: the session they were listed in (a ``ClientSession``, an object with a
    ``.session``, or the instrumentation's own session state). Never raises.
    """
    if source is None:
        return
    try:
        from otel_mcp_health.instrumentation import record_installed_tools

        record_installed_tools(source, tools)
    except Exception:  # the framework's install must go on whatever happens to our record
        _logger.debug("otel-mcp-health: framework install record failed", exc_info=True)
