"""Post-import hooks that wrap an agent framework's install point (private).

A :class:`Framework` names its distribution, the oldest release its hooks were verified on (a
PEP 440 range open upward: a new release is judged by its shape, not its number) and its
:class:`Patch` es. :func:`register_hooks` registers one post-import hook per patched module; when
that module is imported (or at once, if it already is) the framework's version is checked against
the floor, every hook point of the module is checked for the shape its hook relies on
(:mod:`._shape`: present, a coroutine function exactly when the hook awaits it, the parameters
it reads), and only then is anything wrapped. A framework that fails either check is not hooked
at all (what was wrapped of it in another module is unwrapped): one warning naming the
framework, its version and each hook point's problem, and ``framework_install`` in
``mcp_health.evidence.missing`` on the calls from then on, so none is judged ``healthy``
(docs/frameworks.md). The framework itself runs untouched. wrapt cannot unregister a post-import
hook, so a hook that fires while uninstrumented does nothing (a module already imported is
handled at once); :func:`unwrap_hooks` unwraps what was wrapped.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType
from typing import Any

import wrapt
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from otel_mcp_health._hook_shape import mismatch

_logger = logging.getLogger(__name__)

#: ``wrapper(wrapped, instance, args, kwargs)``, as wrapt calls it.
Wrapper = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]


#: The ``mcp_health.evidence.missing`` name of what a refused framework's hooks would record.
FRAMEWORK_INSTALL = "framework_install"


@dataclass(frozen=True, slots=True)
class Patch:
    """One attribute to wrap: ``module`` (imported by name) and a dotted ``name`` in it.

    ``reads``: the leading parameters (after ``self`` / ``cls``) the wrapper reads, by position
    or by name; the hook point must still take them, in that order.
    """

    module: str
    name: str
    wrapper: Wrapper
    reads: tuple[str, ...] = ()

    def mismatch(self) -> str | None:
        """What about the hook point breaks this hook (None: the expected shape)."""
        return mismatch(self.module, self.name, self.wrapper, self.reads)


def in_module(module: str, wrappers: Mapping[str, Wrapper]) -> tuple[Patch, ...]:
    """The patches of one module: each dotted name in it with its wrapper, in the given order."""
    return tuple(Patch(module, name, wrapper) for name, wrapper in wrappers.items())


@dataclass(frozen=True, slots=True)
class Framework:
    """An agent framework's install hooks and the versions of it they support.

    Most frameworks patch one module: ``patches=in_module(module, {name: wrapper, ...})``.
    """

    distribution: str
    supported: str
    patches: tuple[Patch, ...]
    #: What a refusal loses, in the warning, and the ``mcp_health.evidence.missing`` name it
    #: puts on every call (None: nothing is marked missing, as for an LLM client library whose
    #: requests are extra evidence: without it the catalog is judged as it was before).
    unread: str = (
        "the tools it installs are not recorded (the catalog is judged on the discovery result)"
    )
    missing: str | None = FRAMEWORK_INSTALL

    def modules(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(patch.module for patch in self.patches))


_ACTIVE: list[Framework] = []
#: Modules with a post-import hook that has not fired yet (wrapt fires each registration once).
_PENDING: set[str] = set()
_WRAPPED: list[Patch] = []
#: (distribution, module) pairs already handled, and each distribution's version found.
_DONE: set[tuple[str, str]] = set()
_VERSIONS: dict[str, Version] = {}
#: Distributions found below the floor or with a hook point of another shape: never hooked.
_REFUSED: set[str] = set()
#: The refusals already said (distribution, version, why): kept across :func:`unwrap_hooks`.
_SAID: set[tuple[str, str, str]] = set()


def register_hooks(frameworks: tuple[Framework, ...]) -> None:
    """Wrap each framework's install points once its modules are imported. Adds to what an
    earlier call registered (the instrumentor registers the agent frameworks, then the LLM
    client libraries); :func:`unwrap_hooks` forgets them all."""
    _ACTIVE.extend(framework for framework in frameworks if framework not in _ACTIVE)
    for framework in frameworks:
        for module in framework.modules():
            if module in sys.modules:
                _on_import(_settled(module))
            elif module not in _PENDING:
                _PENDING.add(module)
                wrapt.register_post_import_hook(_on_import, module)


def _settled(name: str) -> ModuleType:
    """The module ``name`` once its import has finished: a module is in ``sys.modules`` from
    the moment another thread starts executing it, and a half-built module's hook points look
    missing (the framework would be refused for the process). ``import_module`` waits on the
    module's import lock; in the thread that is importing it, it returns at once (and on an
    import deadlock the module is taken as it is)."""
    module = sys.modules[name]
    if getattr(getattr(module, "__spec__", None), "_initializing", False):
        try:
            return importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the other thread's import error is its own
            return module
    return module


def _on_import(module: ModuleType) -> None:
    """A patched module was imported: wrap its hook points, if its framework is supported."""
    _PENDING.discard(module.__name__)
    try:
        for framework in _ACTIVE:
            if module.__name__ in framework.modules() and _supported(framework):
                _wrap(framework, module.__name__)
    except Exception:  # a hook must never break the framework's import
        _logger.debug("otel-mcp-health: framework hook failed", exc_info=True)


def _wrap(framework: Framework, module: str) -> None:
    if (framework.distribution, module) in _DONE or framework.distribution in _REFUSED:
        return
    _DONE.add((framework.distribution, module))
    patches = [p for p in framework.patches if p.module == module]
    problems = [(p, problem) for p in patches if (problem := p.mismatch()) is not None]
    if problems:
        described = "; ".join(f"{p.module}.{p.name} {problem}" for p, problem in problems)
        _refuse(framework, described)
        return
    for patch in patches:
        wrapt.wrap_function_wrapper(patch.module, patch.name, patch.wrapper)
        _WRAPPED.append(patch)


def _refuse(framework: Framework, why: str) -> None:
    """Hook nothing of ``framework`` (unwrap what another module's hooks wrapped: a partial
    hook would record a wrong install), say so once and mark its evidence missing."""
    _REFUSED.add(framework.distribution)
    for patch in [p for p in _WRAPPED if p in framework.patches]:
        _WRAPPED.remove(patch)
        _unwrap(patch)
    said = (framework.distribution, str(_VERSIONS.get(framework.distribution)), why)
    if said not in _SAID:  # instrumenting again refuses again, silently: one warning a process
        _SAID.add(said)
        if framework.missing is None:
            _logger.warning("otel-mcp-health: %s %s: %s; %s.", *said, framework.unread)
        else:
            _logger.warning(
                "otel-mcp-health: %s %s: %s; %s and calls are never judged healthy "
                "(mcp_health.evidence.missing: %s).",
                *said,
                framework.unread,
                framework.missing,
            )
    if framework.missing is not None:
        _evidence_missing(framework.missing)


def _evidence_missing(evidence: str) -> None:
    """Add ``evidence`` to what the active instrumentation lacks: every call span from then on
    names it in ``mcp_health.evidence.missing``, as a missing SDK hook does."""
    from otel_mcp_health.instrumentation import add_missing_evidence

    add_missing_evidence(evidence)


def _supported(framework: Framework) -> bool:
    """Whether the release present is at or above the hooks' floor (when it is not: refused,
    one warning); a release that is absent (or unreadable) is skipped silently."""
    if framework.distribution in _REFUSED:
        return False
    if framework.distribution not in _VERSIONS:
        try:
            found = Version(version(framework.distribution))
        except (PackageNotFoundError, InvalidVersion):
            return False
        _VERSIONS[framework.distribution] = found
        if found not in SpecifierSet(framework.supported, prereleases=True):
            _refuse(framework, f"outside the range its hooks support ({framework.supported})")
            return False
    return True


def wrapped() -> tuple[Patch, ...]:
    """The framework hook points currently wrapped."""
    return tuple(_WRAPPED)


def unwrap_hooks() -> None:
    """Unwrap every framework hook point; the post-import hooks stay, inert."""
    _ACTIVE.clear()
    _DONE.clear()
    _VERSIONS.clear()
    _REFUSED.clear()
    while _WRAPPED:
        _unwrap(_WRAPPED.pop())


def _unwrap(patch: Patch) -> None:
    """Put back exactly what was wrapped: read from the owner's ``__dict__``, so a wrapped
    ``classmethod`` or ``staticmethod`` comes back as itself, not as a function bound by
    ``getattr`` (which is what a generic unwrap would store)."""
    *path, attribute = patch.name.split(".")
    owner: Any = sys.modules[patch.module]
    for part in path:
        owner = getattr(owner, part)
    wrapper = vars(owner).get(attribute)
    original = getattr(wrapper, "__wrapped__", None)
    if original is not None:
        setattr(owner, attribute, original)
