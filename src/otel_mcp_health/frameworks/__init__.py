"""What agent frameworks hand their model: the installed registry, recorded without code.

An agent framework lists a server's tools, converts them into its own tool objects and offers
those to its model. What it offers can differ from what the server listed: a framework that
re-lists after ``list_changed`` but keeps its old tools (strands' ``on_tools_changed``) runs
its agent on a stale catalog while discovery looks converged. Each hook here wraps the point
where a framework installs MCP tools, maps what it installed back to the MCP definitions and the
session (or server) they came from, and records them as an ``mcp_health.install`` span
(``mcp_health.catalog.client_source = registered``), the evidence
:func:`otel_mcp_health.record_installed_tools` gives (docs/frameworks.md).

Hooks load only when the framework is imported (post-import hooks, as the contrib
instrumentations do), check the framework's version against the range they support and
degrade loudly: a version outside the range or a missing hook point is one warning, and that
framework's installs are then not recorded (the catalog is judged on the discovery result, as
without a hook). ``McpHealthInstrumentor`` registers them with the SDK hooks and unwraps them
with those.
"""

from __future__ import annotations

from otel_mcp_health.frameworks._crewai import CREWAI_TOOLS
from otel_mcp_health.frameworks._google_adk import GOOGLE_ADK
from otel_mcp_health.frameworks._hooks import (
    Framework,
    Patch,
    register_hooks,
    unwrap_hooks,
    wrapped,
)
from otel_mcp_health.frameworks._langchain import LANGCHAIN
from otel_mcp_health.frameworks._llama_index import LLAMA_INDEX
from otel_mcp_health.frameworks._mcpadapt import MCPADAPT
from otel_mcp_health.frameworks._openai_agents import OPENAI_AGENTS
from otel_mcp_health.frameworks._pydantic_ai import PYDANTIC_AI
from otel_mcp_health.frameworks._strands import STRANDS

#: Every framework hook, in the order they are registered.
FRAMEWORKS: tuple[Framework, ...] = (
    LANGCHAIN,
    PYDANTIC_AI,
    LLAMA_INDEX,
    MCPADAPT,
    CREWAI_TOOLS,
    GOOGLE_ADK,
    STRANDS,
    OPENAI_AGENTS,
)

__all__ = ["FRAMEWORKS", "Framework", "Patch", "register_hooks", "unwrap_hooks", "wrapped"]
