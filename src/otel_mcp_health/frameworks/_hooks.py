"""Post-import hooks that wrap an agent framework's install point (private).

A :class:`Framework` names its distribution, the PEP 440 range of it that its hooks support and
its :class:`Patch` es. :func:`install` registers one post-import hook per patched module; when
that module is imported (or at once, if it already is) the framework's version is checked, every
hook point resolved, and only then is anything wrapped. wrapt cannot unregister a post-import
hook, so a hook that fires while uninstrumented does nothing (a module already imported is
handled at once); :func:`uninstall` unwraps what was wrapped.
"""

from __future__ import annotations

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

_logger = logging.getLogger(__name__)

#: ``wrapper(wrapped, instance, args, kwargs)``, as wrapt calls it.
Wrapper = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class Patch:
    """One attribute to wrap: ``module`` (imported by name) and a dotted ``name`` in it."""

    module: str
    name: str
    wrapper: Wrapper


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

    def modules(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(patch.module for patch in self.patches))


_ACTIVE: list[Framework] = []
#: Modules with a post-import hook that has not fired yet (wrapt fires each registration once).
_PENDING: set[str] = set()
_WRAPPED: list[Patch] = []
#: (distribution, module) pairs already handled, and each distribution's installed version.
_DONE: set[tuple[str, str]] = set()
_VERSIONS: dict[str, Version] = {}


def install(frameworks: tuple[Framework, ...]) -> None:
    """Wrap each framework's install points once its modules are imported."""
    _ACTIVE[:] = frameworks
    for framework in frameworks:
        for module in framework.modules():
            if module in sys.modules:
                _on_import(sys.modules[module])
            elif module not in _PENDING:
                _PENDING.add(module)
                wrapt.register_post_import_hook(_on_import, module)


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
    if (framework.distribution, module) in _DONE:
        return
    _DONE.add((framework.distribution, module))
    patches = [p for p in framework.patches if p.module == module]
    missing = [p for p in patches if not _resolves(p)]
    if missing:
        _logger.warning(
            "otel-mcp-health: %s %s lacks %s; the tools it installs are not recorded.",
            framework.distribution,
            _VERSIONS.get(framework.distribution),
            ", ".join(f"{p.module}.{p.name}" for p in missing),
        )
        return
    for patch in patches:
        wrapt.wrap_function_wrapper(patch.module, patch.name, patch.wrapper)
        _WRAPPED.append(patch)


def _supported(framework: Framework) -> bool:
    """Whether the installed release is in the hooks' range (one warning when it is not)."""
    known = _VERSIONS.get(framework.distribution)
    if known is None:
        try:
            found = Version(version(framework.distribution))
        except (PackageNotFoundError, InvalidVersion):
            return False
        known = _VERSIONS[framework.distribution] = found
        if found not in SpecifierSet(framework.supported, prereleases=True):
            _logger.warning(
                "otel-mcp-health: %s %s is outside the supported range %s; the tools it installs "
                "are not recorded (its catalogs are judged on the discovery result).",
                framework.distribution,
                found,
                framework.supported,
            )
    return known in SpecifierSet(framework.supported, prereleases=True)


def _resolves(patch: Patch) -> bool:
    owner: object = sys.modules.get(patch.module)
    if owner is None:
        return False
    for part in patch.name.split("."):
        owner = getattr(owner, part, None)
        if owner is None:
            return False
    return True


def installed() -> tuple[Patch, ...]:
    """The framework hook points currently wrapped."""
    return tuple(_WRAPPED)


def uninstall() -> None:
    """Unwrap every framework hook point; the post-import hooks stay, inert."""
    _ACTIVE.clear()
    _DONE.clear()
    _VERSIONS.clear()
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
