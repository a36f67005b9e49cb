"""Each hook's shape check on the installed framework's real hook points (``_hook_shape``).

Collected where a hooked framework is installed (its cell of ``noxfile.py``, pinned or newest;
``mcp_latest_1x`` for langchain-mcp-adapters): first, every hook point of the installed release
has the shape its hook relies on, so every patch of the framework is wrapped (on a newest
release this is the check that the hooks still fit). Then each real hook point is replaced in
turn, on its real class or module, by one of another shape -- a plain function where the hook
awaits, a coroutine function where it uses the value, a parameter the hook reads renamed, the
attribute gone -- and the framework is installed again: nothing of it is wrapped, one warning
names the hook point and ``framework_install``, and the framework's call of that hook point
returns what it returns without us.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import sys
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import pytest

from otel_mcp_health.frameworks import (
    FRAMEWORKS,
    Framework,
    Patch,
    _hooks,
    register_hooks,
    unwrap_hooks,
    wrapped,
)


def _installed(framework: Framework) -> bool:
    try:
        version(framework.distribution)
    except PackageNotFoundError:
        return False
    return True


HERE = [framework for framework in FRAMEWORKS if _installed(framework)]
PATCHES = [(framework, patch) for framework in HERE for patch in framework.patches]
SENTINEL = ("the framework's own result",)


def _patch_id(item: tuple[Framework, Patch]) -> str:
    return f"{item[0].distribution}:{item[1].module}.{item[1].name}"


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(_hooks, "_SAID", set())  # each test's refusals are said anew
    unwrap_hooks()
    yield
    unwrap_hooks()


def _import(framework: Framework) -> None:
    for module in framework.modules():
        importlib.import_module(module)


@pytest.mark.parametrize("framework", HERE, ids=lambda f: f.distribution)
def test_the_installed_release_has_the_shape_every_hook_expects(
    framework: Framework, caplog: pytest.LogCaptureFixture
) -> None:
    _import(framework)
    problems = {f"{p.module}.{p.name}": p.mismatch() for p in framework.patches}
    assert {name: problem for name, problem in problems.items() if problem} == {}
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        register_hooks((framework,))
    assert set(wrapped()) == set(framework.patches)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def _owner(patch: Patch) -> tuple[Any, str]:
    owner: Any = sys.modules[patch.module]
    *path, attribute = patch.name.split(".")
    for part in path:
        owner = getattr(owner, part)
    return owner, attribute


def _replacement(patch: Patch, kind: str) -> Any:
    """A hook point of another shape, stored as the real one is (classmethod, method, function)."""
    owner, attribute = _owner(patch)
    real = inspect.getattr_static(owner, attribute)
    awaited = inspect.iscoroutinefunction(patch.wrapper)
    reads = list(patch.reads)
    if kind == "renamed parameter":
        reads[-1] = f"{reads[-1]}_renamed"
    is_async = awaited if kind == "renamed parameter" else not awaited

    def plain(*args: Any, **kwargs: Any) -> Any:
        return SENTINEL

    async def coroutine(*args: Any, **kwargs: Any) -> Any:
        return SENTINEL

    function: Any = coroutine if is_async else plain
    bound = ["self"] if isinstance(owner, type) and not isinstance(real, staticmethod) else []
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    function.__signature__ = inspect.Signature(
        [inspect.Parameter(name, positional) for name in [*bound, *reads]]
    )
    if isinstance(real, classmethod):
        return classmethod(function)
    if isinstance(real, staticmethod):
        return staticmethod(function)
    return function


def _call(owner: Any, attribute: str) -> Any:
    """The framework's call of the hook point, as far as its shape lets the test make it."""
    result = getattr(owner, attribute)(object(), object(), object())
    return asyncio.run(result) if inspect.iscoroutine(result) else result


KINDS = ["another sync-ness", "renamed parameter", "gone"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("item", PATCHES, ids=_patch_id)
def test_a_real_hook_point_of_another_shape_is_refused(
    item: tuple[Framework, Patch],
    kind: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    framework, patch = item
    if kind == "renamed parameter" and not patch.reads:
        kind = "another sync-ness"  # a hook that reads no parameter: its shape is its sync-ness
    _import(framework)
    owner, attribute = _owner(patch)
    if kind == "gone":  # from the class and every base that defines it
        for holder in owner.__mro__ if isinstance(owner, type) else (owner,):
            if attribute in vars(holder):
                monkeypatch.delattr(holder, attribute)
    else:
        replacement = _replacement(patch, kind)
        monkeypatch.setattr(owner, attribute, replacement)
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        register_hooks((framework,))
        register_hooks((framework,))  # instrumenting again: still one warning
    assert wrapped() == ()
    [warning] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert f"{patch.module}.{patch.name} " in warning
    assert f"{framework.distribution} {version(framework.distribution)}: " in warning
    assert "mcp_health.evidence.missing: framework_install" in warning
    if kind != "gone":
        assert vars(owner)[attribute] is replacement  # not wrapped: the framework's own object
        assert _call(owner, attribute) == SENTINEL
