"""Which SDK hooks to wrap on the ``mcp`` line in use, and what is lost when one is absent.

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

from otel_mcp_health._hook_shape import mismatch
from otel_mcp_health.instrumentation import (
    _call_checks,
    _catalog_hooks,
    _dispatch_wrappers,
    _http_facts,
    _in_process,
    _notifications,
    _outcomes,
    _request_hooks,
    _result_hooks,
    _session_hooks,
    _session_wrappers,
    _sse,
    _stdio,
    _streamable_http,
    _v1_wrappers,
)
from otel_mcp_health.instrumentation._sdk import EVIDENCE, MCP_LINE, sdk_version
from otel_mcp_health.instrumentation._shell import UnboundWrapper, after, bind
from otel_mcp_health.instrumentation._state import Telemetry

_logger = logging.getLogger(__name__)

#: The extraction seam: every function of ours a wrapper calls, always through these modules'
#: attributes (or, from a wrapper in the same module, by its name there: the module's attribute
#: all the same). The contract of a hook module: every public function in it is a hook but the
#: wrapper code its ``WRAPPERS`` names (a transport's home), called inside a fence, so a test can
#: make each one raise and prove the host sees no difference (the host comes first); a hook that
#: observes a request records what it saw as a fact of it (:mod:`otel_mcp_health.core.facts`) and
#: decides nothing (the fold does, when the request ends); nothing in a hook module reads argument
#: values, result text, headers other than ``WWW-Authenticate``'s ``error``/``scope`` or exception
#: messages (docs/model.md#privacy).
HOOK_MODULES = (
    _session_hooks,
    _request_hooks,
    _call_checks,
    _result_hooks,
    _catalog_hooks,
    _http_facts,
    _stdio,
    _sse,
    _streamable_http,
    _in_process,
    _notifications,
    _outcomes,
)


@dataclass(frozen=True, slots=True)
class Hook:
    """One wrapt patch: ``module``'s attribute path ``name`` wrapped by ``wrapper``.

    A private hook point is checked for the shape its wrapper relies on before anything is
    wrapped (:mod:`otel_mcp_health._hook_shape`): a coroutine function exactly when the
    wrapper is one (unless ``any_kind``), and ``reads``, the leading parameters the wrapper reads
    (after ``self``), still there in that order.
    """

    module: str
    name: str
    #: ``None``: a private attribute the hooks read (declared on its class), not wrapped.
    wrapper: UnboundWrapper | None
    #: ``None`` for public API (required); else the ``_sdk.EVIDENCE`` key it provides.
    evidence: str | None = None
    reads: tuple[str, ...] = ()
    #: The wrapper hands back what the SDK's call returned without awaiting it: it fits a plain
    #: function and a coroutine function alike.
    any_kind: bool = False

    def mismatch(self) -> str | None:
        """What about a private hook point breaks its wrapper (``None``: the expected shape, or
        nothing to check: public API and attributes that are read, not wrapped)."""
        if self.evidence is None or self.wrapper is None:
            return None
        return mismatch(self.module, self.name, self.wrapper, self.reads, any_kind=self.any_kind)


_SESSION = "mcp.client.session"
_DIRECT = "mcp.shared.direct_dispatcher"
_JSONRPC = "mcp.shared.jsonrpc_dispatcher"
_HTTP = "mcp.client.streamable_http"
_STDIO = "mcp.client.stdio"
_LISTEN = "mcp.client.subscriptions"
_SESSIONS = _session_hooks
_CHANNELS = _notifications

#: Both lines: a session's life (registration, clock, duration), then a stdio server's start.
_SESSION_LIFE = (
    Hook(
        _SESSION,
        "ClientSession.__init__",
        after(_SESSIONS, "register_session", "session registration", awaited=False),
    ),
    Hook(
        _SESSION,
        "ClientSession.__aenter__",
        after(_SESSIONS, "session_started", "session start", awaited=True),
    ),
    Hook(_SESSION, "ClientSession.__aexit__", _session_wrappers.session_aexit),
)
_STDIO_PROCESS = Hook(
    _STDIO,
    "_create_platform_compatible_process",
    _stdio.stdio_process,
    "stdio_transport",
    reads=("command", "args", "env"),
)
#: Both lines: an in-process server starts reading its requests (names its sessions' server).
_SERVER_RUN = Hook("mcp.server.lowlevel.server", "Server.run", _in_process.server_run)
#: Both lines: the loop that reads a session's stream returned (the stream ended).
_STREAM_END = after(_CHANNELS, "stream_ended", "session stream end", awaited=True, telemetry=True)


def _http_transport(post: UnboundWrapper, httpx: str) -> tuple[Hook, ...]:
    """The streamable HTTP transport's POST (``post``: per line), its HTTP client's ``send``
    (``httpx``: the HTTP client module of the line) and its GET stream."""
    return (
        Hook(
            _HTTP,
            "StreamableHTTPTransport._handle_post_request",
            post,
            "http_status",
            reads=("ctx",),
        ),
        Hook(httpx, "AsyncClient.send", _streamable_http.client_send),
        Hook(
            _HTTP,
            "StreamableHTTPTransport.handle_get_stream",
            _notifications.handle_get_stream,
            "get_stream",
            reads=("client", "read_stream_writer"),
        ),
    )


#: mcp 2.x, 2026-07-28 era: a session's ``subscriptions/listen`` streams (its notification
#: channel there): a route is registered before its request is written, the server's
#: acknowledgment says what it honours, and the route settles once when the stream ends.
_LISTEN_STREAMS = (
    Hook(
        _SESSION,
        "ClientSession._register_listen_route",
        after(_CHANNELS, "listen_route", "listen route", awaited=False, result=True),
        "listen",
    ),
    Hook(
        _LISTEN,
        "ListenRoute.set_acked",
        after(
            _CHANNELS, "listen_acknowledged", "listen acknowledged", awaited=False, telemetry=True
        ),
        "listen",
    ),
    Hook(
        _LISTEN,
        "ListenRoute.settle",
        after(_CHANNELS, "listen_settled", "listen settled", awaited=False, telemetry=True),
        "listen",
    ),
)

#: mcp 2.x: the dispatcher carries every request (module-level functions are looked up in their
#: module at call time by the SDK, so patching the module attribute reaches every caller).
HOOKS_2X: Final = (
    *_SESSION_LIFE,
    Hook(_SESSION, "ClientSession.send_request", _session_wrappers.send_request),
    Hook(_SESSION, "ClientSession.call_tool", _session_wrappers.call_tool),
    Hook(_SESSION, "ClientSession.validate_tool_result", _session_wrappers.validate_tool_result),
    Hook(
        _SESSION,
        "ClientSession._on_notify",
        _notifications.notified,
        "list_changed",
        reads=("dctx", "method"),
    ),
    Hook(
        _SESSION,
        "ClientSession._on_request",
        _notifications.requested,
        "elicitation",
        reads=("dctx", "method"),
    ),
    Hook("mcp.client.client", "Client.call_tool", _session_wrappers.client_call_tool),
    Hook(
        "mcp.client.client",
        "Client._build_session",
        after(_in_process, "in_process_client", "in-process client", awaited=True, result=True),
        "in_process_identity",
    ),
    _SERVER_RUN,
    Hook(_JSONRPC, "JSONRPCDispatcher.send_raw_request", _dispatch_wrappers.send_raw_request),
    Hook(_DIRECT, "DirectDispatcher.send_raw_request", _dispatch_wrappers.send_raw_request),
    Hook(
        _DIRECT,
        "DirectDispatcher._make_context",
        _dispatch_wrappers.make_context,
        "request_id",
        reads=("on_progress", "request_id"),
    ),
    Hook(_JSONRPC, "otel_span", _dispatch_wrappers.otel_span, "sdk_span"),
    Hook(_JSONRPC, "JSONRPCDispatcher.run", _STREAM_END, "stream_end"),
    Hook(
        _JSONRPC,
        "JSONRPCDispatcher._write",
        _dispatch_wrappers.dispatcher_write,
        "request_write",
        reads=("message",),
        any_kind=True,
    ),
    Hook(
        _JSONRPC,
        "JSONRPCDispatcher._dispatch_notification",
        _dispatch_wrappers.dispatch_notification,
        "progress_token",
        reads=("msg", "metadata", "on_notify", "sender_ctx"),
    ),
    _STDIO_PROCESS,
    *_http_transport(_streamable_http.handle_post_request, "httpx2"),
    *_LISTEN_STREAMS,
)

#: mcp 1.x: ``BaseSession.send_request`` carries every request; the HTTP transport runs outside
#: the caller's context and talks ``httpx`` (2.x: ``httpx2``; the same hook on ``send``).
HOOKS_1X: Final = (
    *_SESSION_LIFE,
    Hook(_SESSION, "ClientSession.send_request", _v1_wrappers.send_request),
    Hook(_SESSION, "ClientSession.call_tool", _session_wrappers.call_tool),
    Hook(
        _SESSION,
        "ClientSession._validate_tool_result",
        _session_wrappers.validate_tool_result,
        "output_schema",
        reads=("name",),
    ),
    Hook(
        _SESSION,
        "ClientSession._received_notification",
        _notifications.received_notification,
        "list_changed",
        reads=("notification",),
    ),
    Hook(
        _SESSION,
        "ClientSession._received_request",
        _notifications.received_request,
        "elicitation",
        reads=("responder",),
    ),
    _STDIO_PROCESS,
    _SERVER_RUN,
    *_http_transport(_streamable_http.handle_post_request_v1, "httpx"),
    Hook("mcp.shared.session", "BaseSession._request_id", None, "request_id"),
    Hook("mcp.shared.session", "BaseSession._receive_loop", _STREAM_END, "stream_end"),
)


def hooks() -> tuple[Hook, ...]:
    """The hook table of the line in use."""
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


#: The hooks the current ``instrument()`` wrapped (what :func:`unwrap_hooks` unwraps).
_WRAPPED: list[Hook] = []


def wrapped() -> tuple[Hook, ...]:
    """The hooks currently wrapped."""
    return tuple(_WRAPPED)


def wrap_hooks(telemetry: Telemetry) -> None:
    """Wrap every hook that resolves and has the expected shape (remembered for
    :func:`unwrap_hooks`).

    Without a required (public) hook nothing is wrapped: one error says so, the host runs on.
    A private hook point that is missing or of another shape is not wrapped: one warning names
    each and the evidence lost (:func:`_warn`).
    """
    table = hooks()
    required = [h for h in table if h.evidence is None and not _resolves(h.module, h.name)]
    if required:
        _logger.error(
            "otel-mcp-health: mcp %s lacks %s; MCP requests are not instrumented.",
            sdk_version(),
            ", ".join(f"{h.module}.{h.name}" for h in required),
        )
        return
    present = [h for h in table if _resolves(h.module, h.name)]
    shapes = {h: problem for h in present if (problem := h.mismatch()) is not None}
    usable = [h for h in present if h not in shapes]
    for hook in usable:
        if hook.wrapper is not None:
            wrap_function_wrapper(hook.module, hook.name, bind(hook.wrapper, telemetry))
            _WRAPPED.append(hook)
    missing = [h for h in table if h not in usable]
    lost = sorted({h.evidence for h in missing if h.evidence})
    telemetry.missing_evidence = tuple(lost)
    if lost:
        _warn(missing, shapes, lost)


def _warn(missing: list[Hook], shapes: dict[Hook, str], lost: list[str]) -> None:
    """One warning: each hook point missing or of another shape (and what is wrong with it),
    and the evidence that will be missing."""
    names = ", ".join(
        f"{h.module}.{h.name} of the expected shape (it {shapes[h]})"
        if h in shapes
        else f"{h.module}.{h.name}"
        for h in missing
    )
    _logger.warning(
        "otel-mcp-health: mcp %s lacks %s; this evidence will be missing: %s. Affected calls are "
        "never judged healthy (mcp_health.evidence.missing).",
        sdk_version(),
        names,
        "; ".join(EVIDENCE[e] for e in lost),
    )


def unwrap_hooks() -> None:
    """Unwrap what :func:`wrap_hooks` wrapped, in reverse order."""
    while _WRAPPED:
        hook = _WRAPPED.pop()
        owner, _, attribute = f"{hook.module}.{hook.name}".rpartition(".")
        unwrap(owner, attribute)
