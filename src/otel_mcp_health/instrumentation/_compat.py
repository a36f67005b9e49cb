"""Which SDK hooks to install on the installed ``mcp`` line, and what is lost when one is absent.

One instrumentor covers ``mcp >= 1.19, < 3`` (docs/configuration.md#supported-sdks). The 2.x line
sends every request through a dispatcher and emits its own client span (which we take over);
the 1.x line sends from ``BaseSession.send_request`` and emits no span (we create it). Each line
has its own hook table; hooks on public API are required, hooks on private SDK names (those
naming the evidence they provide) may disappear in a minor release. A missing private hook
never raises into the host: it is skipped, one warning names the SDK version and the evidence
that will be missing (``_sdk.EVIDENCE``), and every span of the session carries
``mcp_health.evidence.missing`` so the processor never calls such a call ``healthy``
(docs/model.md#verdicts).
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from typing import Final

from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from otel_mcp_health.instrumentation import _dispatch_wrappers, _http, _v1_wrappers, _wrappers
from otel_mcp_health.instrumentation import _listen_wrappers as _listen
from otel_mcp_health.instrumentation._sdk import EVIDENCE, MCP_LINE, installed_version
from otel_mcp_health.instrumentation._state import Telemetry
from otel_mcp_health.instrumentation._wrappers import UnboundWrapper

_logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Hook:
    """One wrapt patch: ``module``'s attribute path ``name`` wrapped by ``wrapper``."""

    module: str
    name: str
    #: ``None``: a private attribute the hooks read (declared on its class), not wrapped.
    wrapper: UnboundWrapper | None
    #: ``None`` for public API (required); else the ``_sdk.EVIDENCE`` key it provides.
    evidence: str | None = None


_SESSION = "mcp.client.session"
_DIRECT = "mcp.shared.direct_dispatcher"
_JSONRPC = "mcp.shared.jsonrpc_dispatcher"
_HTTP = "mcp.client.streamable_http"
_STDIO = "mcp.client.stdio"
_LISTEN = "mcp.client.subscriptions"

#: Both lines: a session's life (registration, clock, duration), then a stdio server's start.
_SESSION_LIFE = (
    Hook(_SESSION, "ClientSession.__init__", _wrappers.session_init),
    Hook(_SESSION, "ClientSession.__aenter__", _wrappers.session_aenter),
    Hook(_SESSION, "ClientSession.__aexit__", _wrappers.session_aexit),
)
_STDIO_PROCESS = Hook(
    _STDIO, "_create_platform_compatible_process", _wrappers.stdio_process, "stdio_transport"
)
#: Both lines: an in-process server starts reading its requests (names its sessions' server).
_SERVER_RUN = Hook("mcp.server.lowlevel.server", "Server.run", _dispatch_wrappers.server_run)

#: mcp 2.x: the dispatcher carries every request (module-level functions are looked up in their
#: module at call time by the SDK, so patching the module attribute reaches every caller).
HOOKS_2X: Final = (
    *_SESSION_LIFE,
    Hook(_SESSION, "ClientSession.send_request", _wrappers.send_request),
    Hook(_SESSION, "ClientSession.call_tool", _wrappers.call_tool),
    Hook(_SESSION, "ClientSession.validate_tool_result", _wrappers.validate_tool_result),
    Hook(_SESSION, "ClientSession._on_notify", _wrappers.notified, "list_changed"),
    Hook(_SESSION, "ClientSession._on_request", _wrappers.requested, "elicitation"),
    Hook("mcp.client.client", "Client.call_tool", _wrappers.client_call_tool),
    Hook(
        "mcp.client.client",
        "Client._build_session",
        _dispatch_wrappers.client_build_session,
        "in_process_identity",
    ),
    _SERVER_RUN,
    Hook(_JSONRPC, "JSONRPCDispatcher.send_raw_request", _dispatch_wrappers.send_raw_request),
    Hook(_DIRECT, "DirectDispatcher.send_raw_request", _dispatch_wrappers.send_raw_request),
    Hook(_DIRECT, "DirectDispatcher._make_context", _dispatch_wrappers.make_context, "request_id"),
    Hook(_JSONRPC, "otel_span", _dispatch_wrappers.otel_span, "sdk_span"),
    Hook(
        _JSONRPC, "JSONRPCDispatcher._write", _dispatch_wrappers.dispatcher_write, "request_write"
    ),
    Hook(
        _JSONRPC,
        "JSONRPCDispatcher._dispatch_notification",
        _dispatch_wrappers.dispatch_notification,
        "progress_token",
    ),
    _STDIO_PROCESS,
    Hook(
        _HTTP,
        "StreamableHTTPTransport._handle_post_request",
        _http.handle_post_request,
        "http_status",
    ),
    Hook("httpx2", "AsyncClient.send", _http.client_send),
    Hook(_HTTP, "StreamableHTTPTransport.handle_get_stream", _http.handle_get_stream, "get_stream"),
    Hook(_SESSION, "ClientSession._register_listen_route", _listen.listen_route, "listen"),
    Hook(_LISTEN, "ListenRoute.set_acked", _listen.listen_acked, "listen"),
    Hook(_LISTEN, "ListenRoute.settle", _listen.listen_settled, "listen"),
)

#: mcp 1.x: ``BaseSession.send_request`` carries every request; the HTTP transport runs outside
#: the caller's context and talks ``httpx`` (2.x: ``httpx2``; the same hook on ``send``).
HOOKS_1X: Final = (
    *_SESSION_LIFE,
    Hook(_SESSION, "ClientSession.send_request", _v1_wrappers.send_request),
    Hook(_SESSION, "ClientSession.call_tool", _wrappers.call_tool),
    Hook(
        _SESSION,
        "ClientSession._validate_tool_result",
        _wrappers.validate_tool_result,
        "output_schema",
    ),
    Hook(
        _SESSION,
        "ClientSession._received_notification",
        _v1_wrappers.received_notification,
        "list_changed",
    ),
    Hook(_SESSION, "ClientSession._received_request", _v1_wrappers.received_request, "elicitation"),
    _STDIO_PROCESS,
    _SERVER_RUN,
    Hook(
        _HTTP,
        "StreamableHTTPTransport._handle_post_request",
        _v1_wrappers.handle_post_request,
        "http_status",
    ),
    Hook("httpx", "AsyncClient.send", _http.client_send),
    Hook(_HTTP, "StreamableHTTPTransport.handle_get_stream", _http.handle_get_stream, "get_stream"),
    Hook("mcp.shared.session", "BaseSession._request_id", None, "request_id"),
)


def hooks() -> tuple[Hook, ...]:
    """The installed line's hook table."""
    return HOOKS_1X if MCP_LINE == 1 else HOOKS_2X


def _resolves(module: str, path: str) -> bool:
    """The attribute exists (an instance attribute counts when its class declares it)."""
    try:
        owner: object = importlib.import_module(module)
    except ImportError:
        return False
    for part in path.split("."):
        if hasattr(owner, part):
            owner = getattr(owner, part)
        else:
            return part in getattr(owner, "__annotations__", {})
    return True


#: The hooks the current ``instrument()`` wrapped (what :func:`uninstall` unwraps).
_INSTALLED: list[Hook] = []


def installed() -> tuple[Hook, ...]:
    """The hooks currently wrapped."""
    return tuple(_INSTALLED)


def install(telemetry: Telemetry) -> None:
    """Wrap every hook that resolves (remembered for :func:`uninstall`).

    Without a required (public) hook nothing is installed: one error says so, the host runs on.
    """
    table = hooks()
    required = [h for h in table if h.evidence is None and not _resolves(h.module, h.name)]
    if required:
        _logger.error(
            "otel-mcp-health: mcp %s lacks %s; MCP requests are not instrumented.",
            installed_version(),
            ", ".join(f"{h.module}.{h.name}" for h in required),
        )
        return
    present = [h for h in table if _resolves(h.module, h.name)]
    for hook in present:
        if hook.wrapper is not None:
            wrap_function_wrapper(hook.module, hook.name, _wrappers.bind(hook.wrapper, telemetry))
            _INSTALLED.append(hook)
    missing = [h for h in table if h not in present]
    lost = sorted({h.evidence for h in missing if h.evidence})
    telemetry.missing_evidence = tuple(lost)
    if lost:
        _warn(missing, lost)


def _warn(missing: list[Hook], lost: list[str]) -> None:
    names = ", ".join(f"{h.module}.{h.name}" for h in missing)
    _logger.warning(
        "otel-mcp-health: mcp %s lacks %s; this evidence will be missing: %s. Affected calls are "
        "never judged healthy (mcp_health.evidence.missing).",
        installed_version(),
        names,
        "; ".join(EVIDENCE[e] for e in lost),
    )


def uninstall() -> None:
    """Unwrap what :func:`install` wrapped, in reverse order."""
    while _INSTALLED:
        hook = _INSTALLED.pop()
        owner, _, attribute = f"{hook.module}.{hook.name}".rpartition(".")
        unwrap(owner, attribute)
