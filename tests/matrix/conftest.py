"""Fixtures of the scenario table: the reference server process and one verdict pipeline.

Every span reaches the same :class:`McpHealthSpanProcessor`, whoever created it: ours through the
``TracerProvider`` handed to ``instrument()``, a higher-level client's own spans (FastMCP traces
with the *global* provider) through a switch installed once on the global provider.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from tests.support.matrix_drivers import CHANGING_SERVER, REFERENCE_HTTP, http_server
from tests.support.processor_helpers import Pipeline, instrumenting

#: Agent-framework modules, each collected where its framework is installed (the framework cells
#: of noxfile.py; langchain-mcp-adapters pins ``mcp < 2``): test module -> import it needs.
FRAMEWORK_TESTS = {
    "test_langchain_default.py": "langchain_mcp_adapters",
    "test_langchain_sse.py": "langchain_mcp_adapters",
    "test_framework_pydantic_ai.py": "pydantic_ai",
    "test_framework_pydantic_ai_wrapped.py": "pydantic_ai",
    "test_framework_llama_index.py": "llama_index",
    "test_framework_google_adk.py": "google.adk",
    "test_framework_strands.py": "strands",
    "test_framework_openai_agents.py": "agents",
    "test_framework_smolagents.py": "smolagents",
    "test_framework_crewai.py": "crewai_tools",
    # the frameworks through their real model clients (docs/model.md#agents)
    "test_model_request_langchain.py": "langchain_openai",
    "test_model_request_llama_index.py": "llama_index",
    "test_model_request_smolagents.py": "smolagents",
    "test_model_request_haystack.py": "haystack_integrations",
    "test_model_request_dspy.py": "dspy",
    "test_model_request_semantic_kernel.py": "semantic_kernel",
    "test_model_request_autogen.py": "autogen_ext",
    "test_model_request_openai_agents.py": "agents",
    "test_model_request_pydantic_ai.py": "pydantic_ai",
}
#: The framework modules a cell exists to run (``noxfile.py`` names them, comma-separated): never
#: ignored, so a framework whose install broke fails the cell instead of vanishing from it.
REQUIRED = frozenset(filter(None, os.environ.get("MCP_HEALTH_REQUIRED_FRAMEWORKS", "").split(",")))
collect_ignore = [
    path
    for path, module in FRAMEWORK_TESTS.items()
    if path not in REQUIRED and importlib.util.find_spec(module) is None
]
#: The hook-shape checks on the real classes (test_framework_shapes.py): collected where any
#: framework above is installed (every framework cell requires it).
if len(collect_ignore) == len(FRAMEWORK_TESTS) and "test_framework_shapes.py" not in REQUIRED:
    collect_ignore.append("test_framework_shapes.py")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A required framework module that collected no test fails the run (before ``-k``)."""
    empty = sorted(REQUIRED - {item.path.name for item in items})
    if empty:
        raise pytest.UsageError(f"required framework modules collected no test: {empty}")


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def reference_url() -> Iterator[str]:
    """The reference server over streamable HTTP in its own process (127.0.0.1)."""
    with http_server(str(REFERENCE_HTTP)) as url:
        yield url


@pytest.fixture
def changing_url() -> Iterator[str]:
    """A fresh ``changing_server.py`` over streamable HTTP (its own process, 127.0.0.1)."""
    with http_server(str(CHANGING_SERVER), "http") as url:
        yield url


class _Switch(SpanProcessor):
    """Forwards the global provider's spans to the current test's processor, if any."""

    def __init__(self) -> None:
        self.target: SpanProcessor | None = None

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.target is not None:
            self.target.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if self.target is not None:
            self.target.on_end(span)


_SWITCH = _Switch()


@pytest.fixture(scope="session")
def global_switch() -> _Switch:
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    provider.add_span_processor(_SWITCH)
    return _SWITCH


@pytest.fixture
def verdicts(global_switch: _Switch) -> Iterator[Pipeline]:
    """The instrumented client's spans and any borrowed spans, judged by one processor."""
    pipeline = Pipeline.build()
    global_switch.target = pipeline.processor
    try:
        with instrumenting(pipeline):
            yield pipeline
    finally:
        global_switch.target = None
        pipeline.provider.shutdown()


@pytest.fixture
def create_ticket_verified() -> Iterator[None]:
    """A verifier that confirms every ``create_ticket`` (the scenario's healthy call)."""
    from otel_mcp_health.verifiers import clear_verifiers, register_verifier

    clear_verifiers()
    register_verifier("create_ticket", lambda call: True, method="destination_query")
    yield
    clear_verifiers()
