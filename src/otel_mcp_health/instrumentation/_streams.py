"""The memory streams a transport hands a session, and how a session is matched to its
transport by them (private).

A transport's identity is a session's own, never its context's: ``stdio_client`` and
``sse_client`` each yield a write stream, and the session built over that very stream talks that
transport. Their frames are remembered until the write stream exists (:func:`claim`), then only
the stream's shared state is kept, weakly, so no frame (and none of its locals) is held longer.
"""

from __future__ import annotations

import weakref
from collections import deque
from types import FrameType
from typing import Any, TypeVar

#: What a transport remembers of its frame until the stream exists.
V = TypeVar("V")


def stream_state(stream: Any) -> Any:
    """The shared state of a memory stream, also behind mcp 2.x's context wrapper (``None``)."""
    return getattr(getattr(stream, "_inner", stream), "_state", None)


def claim(pending: deque[tuple[FrameType, V]], claimed: weakref.WeakKeyDictionary[Any, V]) -> None:
    """Turn each pending transport frame whose local ``write_stream`` exists into a weak entry of
    ``claimed`` (that stream's shared state -> what the transport knew); a frame whose stream is
    not there yet stays pending, in order."""
    for _ in range(len(pending)):
        frame, known = pending.popleft()
        written = stream_state(frame.f_locals.get("write_stream"))
        if written is None:
            pending.append((frame, known))
        else:
            claimed[written] = known
