"""Wrappers of ``subscriptions/listen`` streams (mcp 2.x, the 2026-07-28 era): a session's
notification channel there (private; the rules every wrapper follows: :mod:`._wrappers`).

A listen route is registered for its session before its request is written; the server's
acknowledgment says what it honours, and the route settles once when the stream ends.
"""

from __future__ import annotations

from typing import Any

from otel_mcp_health.instrumentation import _session_hooks
from otel_mcp_health.instrumentation._state import Telemetry
from otel_mcp_health.instrumentation._wrappers import Args, Kwargs, active, fence


def listen_route(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
) -> Any:
    """``ClientSession._register_listen_route``: a listen stream of this session is opening."""
    route = wrapped(*args, **kwargs)
    if active(configured) is not None:
        with fence("listen route"):
            _session_hooks.listen_route(instance, route)
    return route


def listen_acked(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
) -> Any:
    """``ListenRoute.set_acked``: the server acknowledged the stream (what it honours)."""
    result = wrapped(*args, **kwargs)
    telemetry = active(configured)
    if telemetry is not None:
        with fence("listen acknowledged"):
            _session_hooks.listen_acknowledged(telemetry, instance)
    return result


def listen_settled(
    configured: Telemetry,
    wrapped: Any,
    instance: Any,
    args: Args,
    kwargs: Kwargs,
) -> Any:
    """``ListenRoute.settle``: the stream ended (the first end wins)."""
    result = wrapped(*args, **kwargs)
    telemetry = active(configured)
    if telemetry is not None:
        with fence("listen settled"):
            _session_hooks.listen_settled(telemetry, instance)
    return result
