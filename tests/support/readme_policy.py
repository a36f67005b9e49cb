"""The README's declarative outcome policy, installed as a deployment installs it.

The README's ``outcomes.toml`` (read-only tools need no verifier) is loaded from the README
itself, so the tests that rely on it check the configuration a reader copies.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from otel_mcp_health.verifiers import OutcomePolicy

README = Path(__file__).resolve().parents[2] / "README.md"


@contextmanager
def installed_readme_policy() -> Iterator[None]:
    """The README's ``outcomes.toml``, installed as ``OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES``
    would install it; uninstalled on exit."""
    blocks = re.findall(r"```toml\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "outcomes.toml"
        path.write_text(next(b for b in blocks if "read_only = true" in b), encoding="utf-8")
        policy = OutcomePolicy.load(path)
    policy.install()
    try:
        yield
    finally:
        policy.uninstall()
