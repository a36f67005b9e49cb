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
from dataclasses import dataclass
from typing import TypeVar

from otel_mcp_health import environment_variables as env
from otel_mcp_health.core.traversal import DEFAULT_MAX_PAGES
from otel_mcp_health.core.vocabulary import DEFAULT_MAX_AGE_SECONDS, DEFAULT_SUPPORTED_VERSIONS

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


def option(given: _T | None, env_name: str, parse: Callable[[str], _T], default: _T) -> _T:
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


def max_pages_(given: int | None = None) -> int:
    """Pages walked per ``tools/list`` traversal (``OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_PAGES``)."""
    value = option(
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


def approved_catalog_(given: str | os.PathLike[str] | None = None) -> str | None:
    """The approved catalog (pin file) to judge discoveries against: the keyword argument, else
    ``OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG``, else none (``None``)."""
    if given is not None:
        return os.fspath(given)
    raw = os.environ.get(env.OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG, "").strip()
    return raw or None


def supported_versions_(given: Sequence[str] | None) -> tuple[str, ...]:
    """MCP versions the client run supports."""
    if given is not None:
        return tuple(given)
    return from_env(
        env.OTEL_INSTRUMENTATION_MCP_HEALTH_SUPPORTED_VERSIONS, versions, DEFAULT_SUPPORTED_VERSIONS
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessorOptions:
    """Every option of :class:`~otel_mcp_health.McpHealthSpanProcessor`, resolved."""

    enabled: bool
    max_sessions: int
    session_idle_s: float
    catalog_max_age_s: float
    supported_versions: tuple[str, ...]
    max_pages: int


def processor_options(
    *,
    enabled: bool | None,
    max_sessions: int | None,
    session_idle_s: float | None,
    catalog_max_age_s: float | None,
    supported_versions: Sequence[str] | None,
    max_pages: int | None,
) -> ProcessorOptions:
    """Keyword arguments, then environment variables, then defaults."""
    return ProcessorOptions(
        enabled=option(enabled, env.OTEL_INSTRUMENTATION_MCP_HEALTH_PROCESSOR_ENABLED, flag, True),
        max_sessions=require_positive_int(
            "max_sessions",
            option(
                max_sessions,
                env.OTEL_INSTRUMENTATION_MCP_HEALTH_MAX_SESSIONS,
                positive_int,
                env.DEFAULT_MAX_SESSIONS,
            ),
        ),
        session_idle_s=_positive_option(
            "session_idle_s",
            session_idle_s,
            env.OTEL_INSTRUMENTATION_MCP_HEALTH_SESSION_IDLE_S,
            env.DEFAULT_SESSION_IDLE_S,
        ),
        catalog_max_age_s=_positive_option(
            "catalog_max_age_s",
            catalog_max_age_s,
            env.OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S,
            DEFAULT_MAX_AGE_SECONDS,
        ),
        supported_versions=supported_versions_(supported_versions),
        max_pages=max_pages_(max_pages),
    )


def _positive_option(name: str, given: float | None, env_name: str, default: float) -> float:
    return require_positive(name, option(given, env_name, positive, default))
