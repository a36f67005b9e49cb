"""What each LLM request offers its model: hooks on the LLM client libraries agents use.

Whatever framework (or none) an agent runs on, its model is offered tools in a request to an LLM
API: that request is the ground truth of what was offered. Each hook here reads, from every
request one library sends, only the offered tool definitions (name, description, parameter
schema) and hands them, as :class:`~otel_mcp_health.core.offered.OfferedTool` s, to
``otel_mcp_health.instrumentation.record_model_request(api, tools)``, in the context the request
was made in. The request itself, the response and the application's result are untouched: the
hooks read after the library built the request (or made the call), copy nothing but names and
references, and never raise into the application (docs/model-requests.md).

The hooks reuse the framework hooks' machinery (:mod:`otel_mcp_health.frameworks`): a hook loads
only when its library is imported (nothing is imported that the application did not import), the
library's version is checked against the oldest release the hook was verified on and every hook
point against the shape the hook reads; a refused library is one warning, and its requests are
then not read (no evidence is marked missing: the catalog is judged on the other evidence, as
before these hooks).
"""

from __future__ import annotations

from otel_mcp_health.frameworks import Framework
from otel_mcp_health.model_requests._bedrock import BEDROCK
from otel_mcp_health.model_requests._google_genai import GOOGLE_GENAI
from otel_mcp_health.model_requests._litellm import LITELLM
from otel_mcp_health.model_requests._read import MAX_NAME, MAX_TOOLS
from otel_mcp_health.model_requests._stainless import ANTHROPIC, OPENAI

#: Every LLM client library hooked, in the order they are registered.
MODEL_CLIENTS: tuple[Framework, ...] = (OPENAI, ANTHROPIC, GOOGLE_GENAI, LITELLM, BEDROCK)

__all__ = ["MAX_NAME", "MAX_TOOLS", "MODEL_CLIENTS"]
