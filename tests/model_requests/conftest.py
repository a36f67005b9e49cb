"""Fixtures of the LLM client hooks' tests: a recorder in place of the instrumentation's, and the
real instrumentor.

The OpenAI and Anthropic tests run in the newest cell (both SDKs are test dependencies). Google
GenAI, LiteLLM and boto3 are too heavy for it: their modules are collected where the library is
installed (the ``model_clients`` cell of noxfile.py), and a module named in
``MCP_HEALTH_REQUIRED_MODEL_CLIENTS`` (comma-separated) is never ignored, so a library whose install
broke fails that cell instead of vanishing from it.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import pytest

from otel_mcp_health import instrumentation
from tests.model_requests.harness import Recorded

#: Library modules, each collected where its library is installed: test module -> import it needs.
LIBRARY_TESTS = {
    "test_google_genai.py": "google.genai",
    "test_litellm.py": "litellm",
    "test_bedrock.py": "boto3",
}
REQUIRED = frozenset(
    filter(None, os.environ.get("MCP_HEALTH_REQUIRED_MODEL_CLIENTS", "").split(","))
)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package (google) is absent
        return False


collect_ignore = [
    path
    for path, module in LIBRARY_TESTS.items()
    if path not in REQUIRED and not _installed(module)
]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A required library module that collected no test fails the run (before ``-k``)."""
    empty = sorted(REQUIRED - {item.path.name for item in items})
    if empty:
        raise pytest.UsageError(f"required model-client modules collected no test: {empty}")


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Recorded:
    """What the hooks hand the instrumentation's recorder, in order: (api, offered tools)."""
    seen: Recorded = []

    def record(api: str, tools: Any) -> None:
        seen.append((api, tuple(tools)))

    monkeypatch.setattr(instrumentation, "record_model_request", record)
    return seen


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"
