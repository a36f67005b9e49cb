"""The framework hook loader (``otel_mcp_health.frameworks._hooks``) on a real installed module.

Each test writes a small distribution (a package plus its ``.dist-info``, so
``importlib.metadata`` finds its version) under a temporary ``sys.path`` entry, registers a
:class:`Framework` for it and imports it: the hook must wrap only after the import, only for a
supported version, warn once (naming the distribution, never a value) when it cannot, and unwrap
on ``uninstall``.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otel_mcp_health.frameworks import Framework, Patch, register_hooks, unwrap_hooks, wrapped

NAME = "omh_fakefw"


def _distribution(root: Path, version: str, body: str) -> None:
    package = root / NAME
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text(body)
    info = root / f"{NAME}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary site directory on ``sys.path`` (taken off again by ``monkeypatch``)."""
    monkeypatch.syspath_prepend(tmp_path)
    yield tmp_path
    unwrap_hooks()
    for module in [m for m in sys.modules if m.startswith(NAME)]:
        del sys.modules[module]


SEEN: list[Any] = []


def _wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    SEEN.append(args)
    return wrapped(*args, **kwargs)


FRAMEWORK = Framework(NAME, ">=1, <2", (Patch(f"{NAME}.tools", "install", _wrapper),))


def test_hooks_wrap_once_the_framework_is_imported(site: Path) -> None:
    _distribution(site, "1.4", "def install(x):\n    return x * 2\n")
    register_hooks((FRAMEWORK,))
    assert wrapped() == ()  # nothing is imported, nothing is wrapped
    tools = importlib.import_module(f"{NAME}.tools")
    SEEN.clear()
    assert tools.install(21) == 42  # the framework's own result, unchanged
    assert SEEN == [(21,)]
    unwrap_hooks()
    assert wrapped() == ()
    SEEN.clear()
    assert tools.install(1) == 2
    assert SEEN == []


def test_an_unsupported_version_is_one_warning_and_no_hook(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _distribution(site, "3.0", "def install(x):\n    return x\n")
    register_hooks((FRAMEWORK,))
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        importlib.import_module(f"{NAME}.tools")
    assert wrapped() == ()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert f"{NAME} 3.0: outside the range its hooks support (>=1, <2)" in warnings[0]


def test_a_missing_hook_point_is_one_warning_and_no_hook(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _distribution(site, "1.0", "def renamed(x):\n    return x\n")
    register_hooks((FRAMEWORK,))
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        importlib.import_module(f"{NAME}.tools")
    assert wrapped() == ()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        (
            f"otel-mcp-health: {NAME} 1.0: {NAME}.tools.install is missing; the tools it "
            "installs are not recorded (the catalog is judged on the discovery result) and calls "
            "are never judged healthy (mcp_health.evidence.missing: framework_install)."
        )
    ]


def test_a_framework_imported_before_instrumenting_is_hooked_at_once(site: Path) -> None:
    _distribution(site, "1.0", "def install(x):\n    return x + 1\n")
    tools = importlib.import_module(f"{NAME}.tools")
    register_hooks((FRAMEWORK,))
    assert [p.name for p in wrapped()] == ["install"]
    SEEN.clear()
    assert tools.install(1) == 2
    assert SEEN == [(1,)]


def test_uninstall_puts_a_classmethod_back_as_a_classmethod(site: Path) -> None:
    body = "class Util:\n    @classmethod\n    def install(cls, x):\n        return cls.__name__, x"
    _distribution(site, "1.0", body)
    framework = Framework(NAME, ">=1, <2", (Patch(f"{NAME}.tools", "Util.install", _wrapper),))
    tools = importlib.import_module(f"{NAME}.tools")
    original = vars(tools.Util)["install"]
    register_hooks((framework,))
    SEEN.clear()
    assert tools.Util.install(1) == ("Util", 1)
    assert SEEN == [(1,)]
    unwrap_hooks()
    assert vars(tools.Util)["install"] is original
    assert isinstance(vars(tools.Util)["install"], classmethod)
    assert tools.Util.install(2) == ("Util", 2)
