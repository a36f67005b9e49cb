"""Hook points shaped the way real libraries shape theirs, against the shape check.

Each probe writes a small installed distribution (as ``test_framework_shapes.py`` does) whose
hook point is shaped the way real libraries shape theirs, and states what the host and an SRE
expect: the host's call returns what it returns without us, a refusal is said once a process,
and instrumenting while another thread imports the framework does not refuse it.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.unit.test_framework_shapes import (
    ASYNC_HOOK,
    NAME,
    SEEN,
    SHAPES,
    TOOLS,
    Case,
    _distribution,
    _outcome,
    _warnings,
    site,  # noqa: F401 - the fixture
)

from otel_mcp_health.frameworks import Framework, register_hooks, unwrap_hooks, wrapped

SYNC_FACADE = Case(
    "import asyncio, functools\n"
    "def syncify(f):\n    @functools.wraps(f)\n"
    "    def inner(*a, **k):\n        return asyncio.run(f(*a, **k))\n    return inner\n"
    "class Toolset:\n    @syncify\n"
    "    async def get_tools(self, ctx):\n        return ['a', ctx]\n",
    "Toolset.get_tools",
    ASYNC_HOOK,
    (),
    lambda m: m.Toolset().get_tools(7),
)


def test_a_sync_facade_over_a_coroutine_is_not_turned_into_a_coroutine(
    site: Path,  # noqa: F811
) -> None:
    """``functools.wraps`` around a coroutine function by a *sync* decorator that runs it
    (asyncer.syncify, anyio.from_thread.run style): the hook point returns a value, but
    ``inspect.unwrap`` finds the coroutine function, so the awaiting hook is accepted and the
    host's call returns our coroutine instead of its list."""
    _distribution(site, "5.0", {"tools": SYNC_FACADE.body})
    module = importlib.import_module(TOOLS)
    expected = _outcome(SYNC_FACADE, module)
    register_hooks((SYNC_FACADE.framework(),))
    assert _outcome(SYNC_FACADE, module) == expected


RETURNS_AWAITABLE = Case(
    "class Toolset:\n    def get_tools(self, ctx):\n        return self._get(ctx)\n"
    "    async def _get(self, ctx):\n        return ['a', ctx]\n",
    "Toolset.get_tools",
    ASYNC_HOOK,
    (),
    lambda m: asyncio.run(m.Toolset().get_tools(7)),
)


def test_a_user_subclass_that_returns_an_awaitable_meets_the_base_hook(
    site: Path,  # noqa: F811
) -> None:
    """Held up: the check and the wrapper are on the framework's class; an application's
    subclass overriding the hook point as a plain function that returns ``super()``'s
    coroutine still reaches the wrapped base, and nothing raises TypeError."""
    case = SHAPES["async method"]
    _distribution(site, "5.0", {"tools": case.body})
    module = importlib.import_module(TOOLS)

    class Mine(module.Toolset):  # type: ignore[name-defined,misc]
        def get_tools(self, ctx: object = None) -> Any:
            return super().get_tools(ctx)

    register_hooks((case.framework(),))
    assert [p.name for p in wrapped()] == [case.name]
    assert asyncio.run(Mine().get_tools()) == ["a"]
    assert SEEN == [["a"]]


GATED = (
    "from omh_shapefw import gate\n"
    "gate.entered.set()\n"
    "gate.release.wait(10)\n"
    "class Toolset:\n    async def get_tools(self, ctx=None):\n        return ['a']\n"
)
GATE = "import threading\nentered = threading.Event()\nrelease = threading.Event()\n"


def test_instrumenting_while_another_thread_imports_the_framework_hooks_it(
    site: Path,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A module is in ``sys.modules`` from the moment its import starts: instrumenting while
    another thread is still executing it checks a half-built module, finds the hook point
    "missing", refuses the framework for the process and marks every call unverified."""
    _distribution(site, "5.0", {"tools": GATED, "gate": GATE})
    gate = importlib.import_module(f"{NAME}.gate")
    importer = threading.Thread(target=importlib.import_module, args=(TOOLS,))
    importer.start()
    assert gate.entered.wait(10)
    try:
        with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
            threading.Timer(0.2, gate.release.set).start()
            register_hooks((SHAPES["async method"].framework(),))
    finally:
        gate.release.set()
        importer.join(10)
    assert _warnings(caplog) == []
    assert [p.name for p in wrapped()] == ["Toolset.get_tools"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_a_refusal_is_one_warning_a_process(
    site: Path,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    """instrument / uninstrument / instrument again: the framework is the same release with the
    same shape; the warning is said again on each cycle."""
    case = Case(
        "class Toolset:\n    def get_tools(self, ctx):\n        return ['a', ctx]\n",
        "Toolset.get_tools",
        ASYNC_HOOK,
        (),
        lambda m: m.Toolset().get_tools(7),
    )
    _distribution(site, "5.0", {"tools": case.body})
    importlib.import_module(TOOLS)
    framework: Framework = case.framework()
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        register_hooks((framework,))
        unwrap_hooks()
        register_hooks((framework,))
    assert len(_warnings(caplog)) == 1
