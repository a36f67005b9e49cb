"""What names the server a client session talks to (private; docs/model.md#scope).

One identity for every transport, in memory only: the material that tells servers apart is
hashed with a per-process key into ``mcp_health.server.target_key`` (:func:`target_key`), which is
all that leaves the process of it. It tells apart what can serve different tools and merges what
is the same server:

* HTTP (streamable HTTP, SSE): scheme, host, port, path and query (:func:`http_target`); never
  headers, credentials or session ids, so a rotated token or a reconnect is the same server;
* stdio: the command line, the environment given to the server and its working directory
  (:func:`stdio_target`);
* in-process: the server object itself, as a random token kept while it lives
  (:func:`in_process_target`): two servers of one name and version are two servers.

The exported label of a server is only ``server.address``, ``server.port`` and the handshake's
server name: hosted MCP URLs and command lines often carry keys. Each transport's home learns
which session talks to which target (:mod:`._stdio`, :mod:`._sse`, :mod:`._streamable_http`,
:mod:`._in_process`); the in-process streams are kept here (:data:`IN_PROCESS_STREAMS`), as the
session's own state reads them.
"""

from __future__ import annotations

import secrets
import weakref
from collections.abc import Mapping
from typing import Any

from otel_mcp_health.instrumentation._keyed import KeyedHash

#: The keyed hash of :func:`target_key` (its own per-process key).
_TARGETS = KeyedHash()


def target_key(target: tuple[str, ...]) -> str:
    """Keyed hash of a transport target's identity material (:func:`http_target`,
    :func:`stdio_target`, :func:`in_process_target`), 16 hex digits: names a server within this
    process (docs/model.md#scope), never reveals the target."""
    return _TARGETS.hexdigest("\x00".join(("target", *target)))[:16]


#: The port an HTTP URL without one names, per scheme.
DEFAULT_PORTS = {"http": 80, "https": 443}


def http_target(scheme: str, host: str, port: int | None, path: str, query: str) -> tuple[str, ...]:
    """What tells HTTP servers apart (streamable HTTP, SSE): scheme, host, port, path and query
    (a gateway's paths and a tenant's query name different servers). Never headers, tokens or
    session ids: a rotated credential or a new session is the same server."""
    return ("http", scheme, host, str(port), path, query)


def stdio_target(
    command: str, args: tuple[str, ...], env: Mapping[str, str] | None, cwd: str | None
) -> tuple[str, ...]:
    """What tells stdio servers apart: the command line, the environment it was given and its
    working directory (one command with another environment can serve other tools)."""
    pairs = sorted(f"{k}={v}" for k, v in env.items()) if env is not None else []
    return ("stdio", str(len(args)), command, *args, str(len(pairs)), *pairs, cwd or "")


#: In-process server object -> its random token (weakly held: dies with the server).
_SERVER_TOKENS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def in_process_target(server: Any) -> tuple[str, ...] | None:
    """What tells in-process servers apart: the server object itself, as a random token kept as
    long as it lives (two servers with one name and version are two servers). ``None`` for an
    object that cannot be weakly referenced."""
    # A high-level server wraps the low-level one the transports run (2.x MCPServer, 1.x FastMCP).
    for name in ("_lowlevel_server", "_mcp_server"):
        server = getattr(server, name, server)
    try:
        token = _SERVER_TOKENS.get(server)
        if token is None:
            token = _SERVER_TOKENS[server] = secrets.token_hex(16)
    except TypeError:
        return None
    return ("in_process", token)


#: In-process servers: the shared state of the stream a server reads its requests from (the
#: client session's write stream) -> :func:`in_process_target` of that server (``Server.run``).
IN_PROCESS_STREAMS: weakref.WeakKeyDictionary[Any, tuple[str, ...]] = weakref.WeakKeyDictionary()
