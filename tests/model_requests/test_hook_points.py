"""The LLM client hooks load like the framework hooks: only for a library the application imported,
and only on a hook point of the shape they read.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from otel_mcp_health import frameworks, model_requests
from otel_mcp_health.frameworks import _hooks
from tests.model_requests.harness import instrumented

#: Every module a model-client hook patches.
MODULES = sorted({module for client in model_requests.MODEL_CLIENTS for module in client.modules()})


def test_instrumenting_imports_no_model_client_library() -> None:
    """Instrumenting (the real instrumentor) leaves every library the application did not import
    unimported, and wraps nothing of it."""
    script = (
        "import json, sys\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from otel_mcp_health import McpHealthInstrumentor\n"
        "from otel_mcp_health.frameworks import wrapped\n"
        "McpHealthInstrumentor().instrument(tracer_provider=TracerProvider())\n"
        f"modules = {MODULES!r}\n"
        "print(json.dumps([[m for m in modules if m in sys.modules], len(wrapped())]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [[], 0]


def test_an_imported_library_is_wrapped_at_its_hook_point_and_unwrapped_after() -> None:
    import anthropic._base_client
    import openai._base_client

    originals = [
        vars(anthropic._base_client.BaseClient)["_build_request"],
        vars(openai._base_client.BaseClient)["_build_request"],
    ]
    with instrumented():
        names = {(p.module, p.name) for p in frameworks.wrapped()}
        assert ("openai._base_client", "BaseClient._build_request") in names
        assert ("anthropic._base_client", "BaseClient._build_request") in names
    assert [
        vars(anthropic._base_client.BaseClient)["_build_request"],
        vars(openai._base_client.BaseClient)["_build_request"],
    ] == originals


@pytest.fixture
def reshaped() -> Iterator[Any]:
    """openai's hook point with another shape (the parameter the hook reads renamed), put back
    after the test."""
    import openai._base_client

    owner = openai._base_client.BaseClient
    original = vars(owner)["_build_request"]

    def _build_request(self: Any, request_options: Any, *, retries_taken: int = 0) -> Any:
        return original(self, request_options, retries_taken=retries_taken)

    owner._build_request = _build_request  # type: ignore[method-assign]
    _hooks._SAID.clear()
    try:
        yield owner
    finally:
        owner._build_request = original  # type: ignore[method-assign]


def test_a_hook_point_of_another_shape_is_not_wrapped_and_warns_once(
    reshaped: Any, caplog: pytest.LogCaptureFixture
) -> None:
    replaced = vars(reshaped)["_build_request"]
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        for _ in range(2):  # instrumenting again does not say it again
            with instrumented():
                assert vars(reshaped)["_build_request"] is replaced
                assert all(p.module != "openai._base_client" for p in frameworks.wrapped())
                # the other library is still hooked
                assert any(p.module == "anthropic._base_client" for p in frameworks.wrapped())
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "openai" in warnings[0]
    assert "has 'request_options'" in warnings[0]
    assert "the tools its requests offer the model are not read" in warnings[0]
    assert "evidence.missing" not in warnings[0]


def test_frameworks_imported_after_instrumenting_are_still_hooked() -> None:
    """Registering the model clients after the frameworks keeps both registered."""
    with instrumented():
        assert set(frameworks.FRAMEWORKS) <= set(_hooks._ACTIVE)
        assert set(model_requests.MODEL_CLIENTS) <= set(_hooks._ACTIVE)
    assert _hooks._ACTIVE == []
