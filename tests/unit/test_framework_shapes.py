"""Framework hooks judge a release by its hook points' shape (``_hook_shape``), when wrapping.

Each test writes a small installed distribution (a package plus its ``.dist-info``) whose hook
point has a given shape, registers a :class:`Framework` whose hooks are built as the real ones
are (``after_call`` / ``after_await``, with ``Patch.reads``) and imports it. A hook point of
another shape -- a plain function where the hook awaits, a coroutine function where it uses the
value, a parameter the hook reads gone, renamed or keyword-only, the attribute gone -- is never
wrapped: one warning naming the framework, its version and the hook point,
``framework_install`` in ``mcp_health.evidence.missing`` on the calls of a real MCP session (never
``healthy``), and the framework's own call returns what it returns, or raises what it raises,
without us. The versions are open upward: a release far above the one verified is hooked when
its shape is the expected one.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from tests.integration.mcp_health_servers import build_server
from tests.integration.scenarios import list_all
from tests.support.processor_helpers import instrumented_pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.frameworks import (
    Framework,
    Patch,
    _hooks,
    register_hooks,
    unwrap_hooks,
    wrapped,
)
from otel_mcp_health.frameworks._report import after_await, after_call

NAME = "omh_shapefw"
TOOLS = f"{NAME}.tools"
#: What the hooks saw (a hook that ran appends the result it was handed).
SEEN: list[Any] = []


def _note(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
    SEEN.append(result)


SYNC_HOOK = after_call(_note)
ASYNC_HOOK = after_await(_note)


def _distribution(root: Path, version: str, modules: dict[str, str]) -> None:
    package = root / NAME
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module, body in modules.items():
        (package / f"{module}.py").write_text(body)
    info = root / f"{NAME}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary site directory on ``sys.path``; the hooks and the modules gone afterwards."""
    monkeypatch.syspath_prepend(tmp_path)
    monkeypatch.setattr(_hooks, "_SAID", set())  # each test's refusals are said anew
    SEEN.clear()
    yield tmp_path
    unwrap_hooks()
    for module in [m for m in sys.modules if m.startswith(NAME)]:
        del sys.modules[module]


@dataclass(frozen=True)
class Case:
    """A hook point's source, the hook wrapping it, and how the framework itself calls it."""

    body: str
    name: str
    hook: Any
    reads: tuple[str, ...]
    call: Callable[[Any], Any]

    def framework(self, supported: str = ">=1") -> Framework:
        return Framework(NAME, supported, (Patch(TOOLS, self.name, self.hook, self.reads),))


def _outcome(case: Case, module: Any) -> tuple[str, Any]:
    """What the framework's own call gives: ``("value", v)`` or ``("raised", (type, args))``."""
    try:
        value = case.call(module)
    except Exception as error:  # the host's exception is the outcome compared
        return "raised", (type(error), error.args)
    if asyncio.iscoroutine(value):  # a hook that turned the host's call into a coroutine
        value.close()
        return "coroutine", None
    return "value", value


MISMATCHES = {
    "sync where the hook awaits": Case(
        "class Toolset:\n    def get_tools(self, ctx):\n        return ['a', ctx]\n",
        "Toolset.get_tools",
        ASYNC_HOOK,
        (),
        lambda m: m.Toolset().get_tools(7),
    ),
    "sync where the hook awaits, raising": Case(
        "def install(x):\n    raise ValueError('refused ' + x)\n",
        "install",
        ASYNC_HOOK,
        (),
        lambda m: m.install("x"),
    ),
    "async where the hook uses the value": Case(
        "class Adapt:\n    async def tools(self):\n        return ['t']\n",
        "Adapt.tools",
        SYNC_HOOK,
        (),
        lambda m: asyncio.run(m.Adapt().tools()),
    ),
    "a parameter it reads is gone": Case(
        "class Util:\n    @classmethod\n    def convert(cls, tools, strict):\n"
        "        return [t.upper() for t in tools]\n",
        "Util.convert",
        SYNC_HOOK,
        ("tools", "server"),
        lambda m: m.Util.convert(["a"], True),
    ),
    "a parameter it reads is renamed": Case(
        "class Registry:\n    def process_tools(self, items):\n        return list(items)\n",
        "Registry.process_tools",
        SYNC_HOOK,
        ("tools",),
        lambda m: m.Registry().process_tools(("x",)),
    ),
    "a parameter it reads is keyword-only": Case(
        "async def load(*, session=None):\n    return [session]\n",
        "load",
        ASYNC_HOOK,
        ("session",),
        lambda m: asyncio.run(m.load(session="s")),
    ),
    "fewer parameters than it reads": Case(
        "def convert(session):\n    return [session]\n",
        "convert",
        SYNC_HOOK,
        ("session", "tool"),
        lambda m: m.convert("s"),
    ),
    "the hook point is no longer callable": Case(
        "class Toolset:\n    get_tools = ('a', 'constant')\n",
        "Toolset.get_tools",
        ASYNC_HOOK,
        (),
        lambda m: m.Toolset.get_tools,
    ),
    "the hook point is gone": Case(
        "class Toolset:\n    async def list_tools(self):\n        return []\n",
        "Toolset.get_tools",
        ASYNC_HOOK,
        (),
        lambda m: asyncio.run(m.Toolset().list_tools()),
    ),
}


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("otel_mcp_health") and r.levelno >= logging.WARNING
    ]


@pytest.mark.parametrize("case", MISMATCHES.values(), ids=MISMATCHES.keys())
def test_a_hook_point_of_another_shape_is_not_wrapped(
    case: Case, site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _distribution(site, "7.3", {"tools": case.body})
    module = importlib.import_module(TOOLS)
    expected = _outcome(case, module)  # the framework's own call, no hook anywhere
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        register_hooks((case.framework(),))
        register_hooks((case.framework(),))  # instrumenting again: still one warning
        seen = [_outcome(case, module) for _ in range(2)]
    assert wrapped() == ()
    assert seen == [expected, expected]
    assert SEEN == []  # the hook never ran
    [warning] = _warnings(caplog)
    assert warning.startswith(f"otel-mcp-health: {NAME} 7.3: {TOOLS}.{case.name} ")
    assert "mcp_health.evidence.missing: framework_install" in warning


SHAPES = {
    "async method": Case(
        "class Toolset:\n    async def get_tools(self, ctx=None):\n        return ['a']\n",
        "Toolset.get_tools",
        ASYNC_HOOK,
        (),
        lambda m: asyncio.run(m.Toolset().get_tools()),
    ),
    "classmethod with the parameters it reads": Case(
        "class Util:\n    @classmethod\n    def convert(cls, tools, server, strict=False):\n"
        "        return [t.upper() for t in tools]\n",
        "Util.convert",
        SYNC_HOOK,
        ("tools", "server"),
        lambda m: m.Util.convert(["a"], None),
    ),
    "staticmethod with the parameters it reads": Case(
        "class Util:\n    @staticmethod\n    def convert(tools, server):\n        return tools\n",
        "Util.convert",
        SYNC_HOOK,
        ("tools", "server"),
        lambda m: m.Util.convert(["a"], None),
    ),
    "function read by position": Case(
        "def convert(session, tool, *, prefix=False):\n    return tool\n",
        "convert",
        SYNC_HOOK,
        ("session", "tool"),
        lambda m: m.convert(None, "t"),
    ),
    "decorated coroutine function": Case(
        "import functools\n"
        "def traced(f):\n    @functools.wraps(f)\n"
        "    async def inner(*a, **k):\n        return await f(*a, **k)\n    return inner\n"
        "class Spec:\n    @traced\n    async def fetch_tools(self):\n        return ['f']\n",
        "Spec.fetch_tools",
        ASYNC_HOOK,
        (),
        lambda m: asyncio.run(m.Spec().fetch_tools()),
    ),
}


@pytest.mark.parametrize("case", SHAPES.values(), ids=SHAPES.keys())
def test_the_expected_shape_is_wrapped_in_any_newer_release(
    case: Case, site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The control: the same hooks on hook points of their shape, in a release far above the
    floor, wrap, run and leave the result as it was."""
    _distribution(site, "41.0", {"tools": case.body})
    module = importlib.import_module(TOOLS)
    expected = _outcome(case, module)
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        register_hooks((case.framework(),))
    assert [p.name for p in wrapped()] == [case.name]
    assert _outcome(case, module) == expected
    assert [expected[1]] == SEEN
    assert _warnings(caplog) == []


def test_a_release_below_the_floor_is_refused_loudly(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    case = SHAPES["classmethod with the parameters it reads"]
    _distribution(site, "0.9", {"tools": case.body})
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        register_hooks((case.framework(">=1"),))
        module = importlib.import_module(TOOLS)
    assert wrapped() == ()
    assert case.call(module) == ["A"]
    [warning] = _warnings(caplog)
    assert f"{NAME} 0.9: outside the range its hooks support (>=1)" in warning


def test_one_module_of_another_shape_unhooks_the_whole_framework(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A framework hooked in one module and refused in the next records nothing at all (half a
    hook would record a wrong install: a load whose conversions are never seen is empty)."""
    good = "async def load_tools(session):\n    return ['t']\n"
    bad = "async def convert(session, tool):\n    return tool\n"  # the hook expects it sync
    _distribution(site, "2.0", {"tools": good, "client": bad})
    framework = Framework(
        NAME,
        ">=1",
        (
            Patch(TOOLS, "load_tools", ASYNC_HOOK, ("session",)),
            Patch(f"{NAME}.client", "convert", SYNC_HOOK, ("session", "tool")),
        ),
    )
    register_hooks((framework,))
    tools = importlib.import_module(TOOLS)
    assert [p.name for p in wrapped()] == ["load_tools"]
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        importlib.import_module(f"{NAME}.client")
    assert wrapped() == ()
    assert not hasattr(tools.load_tools, "__wrapped__")
    SEEN.clear()
    assert asyncio.run(tools.load_tools(None)) == ["t"]
    assert SEEN == []
    [warning] = _warnings(caplog)
    assert f"{NAME}.client.convert is now a coroutine function" in warning


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _lookup_call_attributes(pipeline: Any) -> dict[str, Any]:
    async with Client(build_server()) as client:
        await list_all(client)
        await client.call_tool("lookup", {})
    return dict(pipeline.last("tools/call lookup").attributes or {})


@pytest.mark.anyio
@pytest.mark.parametrize("refused", [True, False], ids=["another shape", "the expected shape"])
async def test_a_refused_framework_is_evidence_missing_on_real_calls(
    refused: bool, site: Path
) -> None:
    """A real in-process MCP session's call, instrumented: with a framework refused it names
    ``framework_install`` in ``mcp_health.evidence.missing`` and is never ``healthy``; with the
    same framework hooked (the control) nothing is missing."""
    case = MISMATCHES["sync where the hook awaits"] if refused else SHAPES["async method"]
    _distribution(site, "3.1", {"tools": case.body})
    with instrumented_pipeline() as pipeline:
        register_hooks((case.framework(),))
        importlib.import_module(TOOLS)
        # the instrumentor also hooks the LLM clients the test process imported: only this
        # framework's patches are looked at
        ours = tuple(p for p in wrapped() if p.module.startswith(NAME))
        assert (ours == ()) is refused
        attrs = await _lookup_call_attributes(pipeline)
    if refused:
        assert "framework_install" in attrs[A.EVIDENCE_MISSING]
        assert (attrs[A.VERDICT], attrs[A.REASON]) == ("unverified", "evidence_missing")
    else:
        assert A.EVIDENCE_MISSING not in attrs
        assert attrs[A.REASON] != "evidence_missing"
