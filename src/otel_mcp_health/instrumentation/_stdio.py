"""The stdio transport: which sessions talk to a server process over a pipe, and which process
(private; the rules every wrapper follows: :mod:`._shell`).

A hook module (the seam's contract: :data:`._compat.HOOK_MODULES`) that also holds the wrapper
of the stdio server's start (:data:`WRAPPERS`). ``stdio_client`` starts the server process and
yields a write stream; the session built over that very stream is a pipe, and no other session
(a transport identity is a session's own, never its context's). The process's command line,
environment and working directory name the server (:func:`._targets.stdio_target`).
"""

from __future__ import annotations

import sys
import weakref
from collections import deque
from types import FrameType
from typing import Any

from otel_mcp_health.instrumentation import _targets
from otel_mcp_health.instrumentation._shell import Args, Kwargs, active, fence
from otel_mcp_health.instrumentation._state import SessionState, Telemetry
from otel_mcp_health.instrumentation._streams import claim, stream_state

#: ``stdio_client`` frames that spawned a server process, with its ``_targets.stdio_target``, not
#: matched to their write stream (mcp 2.x creates the streams after the process). Read at the next
#: session registration, then dropped; a frame whose streams never appear is pushed out.
STDIO_FRAMES: deque[tuple[FrameType, tuple[str, ...]]] = deque(maxlen=16)
#: The shared state of a write stream that ``stdio_client`` yielded -> its
#: :func:`._targets.stdio_target` (in memory only: arguments and environment values may hold
#: secrets). A session is a pipe exactly when its own write stream is one of these: a transport
#: identity is a session's own, never its context's.
STDIO_STREAMS: weakref.WeakKeyDictionary[Any, tuple[str, ...]] = weakref.WeakKeyDictionary()


async def stdio_process(
    configured: Telemetry, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
) -> Any:
    """``mcp.client.stdio._create_platform_compatible_process``: awaited by ``stdio_client``,
    whose frame (this coroutine's caller) holds the streams it yields; the session built over
    that very write stream is a pipe, and no other session (:func:`stdio_spawned`).
    """
    caller = sys._getframe(1)  # noqa: SLF001 - the stdio_client frame that owns the streams (the only way to see them)
    process = await wrapped(*args, **kwargs)
    if active(configured) is not None:
        command, argv, env, cwd = map(kwargs.get, ("command", "args", "env", "cwd"))
        with fence("stdio mark"):
            stdio_spawned(caller, command, argv, env, cwd)
    return process


def stdio_spawned(
    frame: FrameType | None, command: Any, args: Any, env: Any = None, cwd: Any = None
) -> None:
    """``stdio_client`` (the frame awaiting the process, or one of its callers) started a server.

    Its write stream exists now (mcp 1.x) or right after the process starts (2.x), as the local
    ``write_stream`` of that frame: it is claimed now or at the next session registration.
    """
    for _ in range(_STDIO_FRAME_DEPTH):
        if frame is None or frame.f_code.co_name == "stdio_client":
            break
        frame = frame.f_back
    if frame is None or frame.f_code.co_name != "stdio_client":
        return
    argv = tuple(map(str, args)) if isinstance(args, list | tuple) else ()
    environment = {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else None
    line = _targets.stdio_target(str(command), argv, environment, None if cwd is None else str(cwd))
    STDIO_FRAMES.append((frame, line))
    claim(STDIO_FRAMES, STDIO_STREAMS)


#: How far above the process hook ``stdio_client``'s frame may be (wrapper layers).
_STDIO_FRAME_DEPTH = 4


def learn_pipe(state: SessionState, dispatcher: Any) -> bool:
    """A new session over the write stream ``stdio_client`` yielded is a pipe to that server
    (``pipe``, target key); ``False``: the session talks another transport."""
    if STDIO_FRAMES:
        claim(STDIO_FRAMES, STDIO_STREAMS)
    written = stream_state(getattr(dispatcher, "_write_stream", None))
    line = STDIO_STREAMS.get(written) if written is not None else None
    if line is None:
        return False
    state.network_transport = "pipe"
    state.target_key = _targets.target_key(line)
    return True


#: The wrapper code of this module (the patch table's row); every other public function is a hook.
WRAPPERS = (stdio_process,)
