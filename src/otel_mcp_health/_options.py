"""The one parser of our settings, shared by the processor and the instrumentation (private).

Keyword arguments win over environment variables, which win over the defaults. An invalid
environment value is logged (its name, never its value) and the default applies; an invalid
keyword argument raises ``ValueError``. The variables are documented in
:mod:`otel_mcp_health.environment_variables` and docs/configuration.md.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Sequence
from typing import TypeVar

from otel_mcp_health import environment_variables as env
from otel_mcp_health.core.traversal import DEFAULT_MAX_PAGES

_logger = logging.getLogger(__name__)
_T = TypeVar("_T")


def from_env(name: str, parse: Callable[[str], _T], default: _T) -> _T:
    """The parsed value of environment variable ``name``, or ``default`` (unset or invalid)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return parse(raw)
    except ValueError:
        _logger.warning("Ignoring invalid value of %s; using the default %r", name, default)
        return default


def positive(raw: str) -> float:
    """A finite number above zero."""
    value = float(raw)
    if not (value > 0 and math.isfinite(value)):
        msg = "not a positive number"
        raise ValueError(msg)
    return value


def positive_int(raw: str) -> int:
    """An integer above zero."""
    value = int(raw)
    if value <= 0:
        msg = "not a positive integer"
        raise ValueError(msg)
    return value


def flag(raw: str) -> bool:
    """``true``/``1``/``yes``/``on`` or ``false``/``0``/``no``/``off`` (any case)."""
    lowered = raw.lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    msg = "not a boolean"
    raise ValueError(msg)


def versions(raw: str) -> tuple[str, ...]:
    """A comma-separated list of at least one version."""
    found = tuple(v.strip() for v in raw.split(",") if v.strip())
    if not found:
        msg = "no version"
        raise ValueError(msg)
    return found


def option(
    name: str, given: _T | None, env_name: str, parse: Callable[[str], _T], default: _T
) -> _T:
    """A keyword argument when given, else the environment, else the default."""
    return given if given is not None else from_env(env_name, parse, default)


def require_positive(name: str, value: float) -> float:
    """``value`` when above zero; else a ``ValueError`` naming the option."""
    if not value > 0:
        msg = f"{name} must be a positive number, got {value!r}"
        raise ValueError(msg)
    return value


def require_positive_int(name: str, value: int) -> int:
    """``value`` when a positive integer; else a ``ValueError`` naming the option."""
    if isinstance(value, bool) or value <= 0:
        msg = f"{name} must be a positive integer, got {value!r}"
        raise ValueError(msg)
    return value


def max_pages(given: int | None = None) -> int:
    """Pages walked per ``tools/list`` traversal (``OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_PAGES``)."""
    value = option(
        "max_pages",
        given,
        env.OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_PAGES,
        positive_int,
        DEFAULT_MAX_PAGES,
    )
    return require_positive_int("max_pages", value)


def idle_window_s() -> float:
    """The idle window recorded on every ``tools/call`` span."""
    return from_env(
        env.OTEL_INSTRUMENTATION_MCP_HEALTH_IDLE_WINDOW_S, positive, env.DEFAULT_IDLE_WINDOW_S
    )


def catalog_digests() -> bool:
    """Whether the instrumentation computes catalog digests."""
    return from_env(env.OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_DIGEST, flag, True)


def supported_versions(given: Sequence[str] | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """MCP versions the client run supports."""
    if given is not None:
        return tuple(given)
    return from_env(env.OTEL_INSTRUMENTATION_MCP_HEALTH_SUPPORTED_VERSIONS, versions, default)
