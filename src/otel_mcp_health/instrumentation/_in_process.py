"""The in-process transport: which server object a session talks to when client and server
share the process (private; docs/model.md#scope; the rules every wrapper follows: :mod:`._shell`).

A hook module (the seam's contract: :data:`._compat.HOOK_MODULES`) that also holds the wrapper
of a server's start (:data:`WRAPPERS`). A session with no transport of its own is named by the
server object that reads its write stream, once that server runs (``Server.run``), or at once by
mcp 2.x's ``Client(server)``. The server object is the identity
(:func:`._targets.in_process_target`); the registry of those streams,
``_targets.IN_PROCESS_STREAMS``, is read by the session's own state
(:meth:`._state.SessionState.server_target`), so it lives with the identities.
"""

from __future__ import annotations

import weakref
from typing import Any

from otel_mcp_health.instrumentation import _state, _targets
from otel_mcp_health.instrumentation._shell import Args, Kwargs, active, argument, fence
from otel_mcp_health.instrumentation._state import SessionState, Telemetry
from otel_mcp_health.instrumentation._streams import stream_state


def server_run(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``mcp.server.lowlevel.Server.run`` (both lines): an in-process server starts reading
    its requests; the client session writing into that stream talks to this server object
    (docs/model.md#scope). Returns the coroutine unchanged."""
    if active(configured) is not None:
        with fence("in-process server"):
            in_process_server(instance, argument(args, kwargs, 0, "read_stream"))
    return wrapped(*args, **kwargs)


def learn_in_process(state: SessionState, dispatcher: Any) -> None:
    """A session with no transport of its own yet: an in-process server reading its write
    stream names it once that server runs (:func:`in_process_server`), and mcp 2.x's
    ``Client(server)`` names it at once (:func:`in_process_client`)."""
    written = stream_state(getattr(dispatcher, "_write_stream", None))
    if written is not None:
        state.pending_stream = weakref.ref(written)


def in_process_server(server: Any, read_stream: Any) -> None:
    """An in-process server (``Server.run``) reads its requests from ``read_stream``: the
    session that writes into it talks to that server object (docs/model.md#scope)."""
    target = _targets.in_process_target(server)
    read = stream_state(read_stream)
    if target is not None and read is not None:
        _targets.IN_PROCESS_STREAMS[read] = target


def in_process_client(client: Any, session: Any) -> None:
    """mcp 2.x ``Client(server)`` built ``session``, before its handshake: for an in-process
    ``server`` (not a URL, stdio parameters or a transport: a direct dispatcher or in-memory
    streams), the session talks to that server object (docs/model.md#scope)."""
    server = getattr(client, "server", None)
    state = _state.SESSIONS.get(session)
    if state is None or state.network_transport is not None or not _is_server(server):
        return
    target = _targets.in_process_target(server)
    if target is not None:
        state.target_key, state.pending_stream = _targets.target_key(target), None


def _is_server(candidate: Any) -> bool:
    """An in-process MCP server object: the low-level ``Server`` or a server wrapping one."""
    from mcp.server.lowlevel import Server

    return isinstance(candidate, Server) or isinstance(
        getattr(candidate, "_lowlevel_server", None), Server
    )


#: The wrapper code of this module (the patch table's row); every other public function is a hook.
WRAPPERS = (server_run,)
