"""The processor's sessions by key: bounded, idle-expiring, released on session end (private).

The store holds at most ``max_sessions`` sessions (least recently used evicted first) and forgets
a session idle for longer than ``idle_ns`` (span timestamps, so tests are deterministic). A session
is released when its ``mcp_health.session.end`` span has arrived and none of its ``tools/call``
spans is still open (a call span may end after its session: it waits for the outcome verifier's
receipt). The store is not thread-safe by itself: the processor holds its lock around every use.
"""

from __future__ import annotations

from collections import OrderedDict

from otel_mcp_health.core.server import CatalogKey, ServerIdentity
from otel_mcp_health.core.traversal import DEFAULT_MAX_PAGES
from otel_mcp_health.processor._sessions import Session


class SessionStore:
    """Sessions by key: LRU-bounded, idle-expiring, released on session end.

    A released session stays closed: a span of it that arrives later (a framework installing
    tools after closing its listing session) is judged in a :meth:`late` session that belongs
    to the server and is never stored (docs/model.md#scope). The keys of the last
    ``max_sessions`` released sessions are remembered with their server's catalog key for that.
    """

    def __init__(
        self, *, max_sessions: int, idle_ns: int, max_pages: int = DEFAULT_MAX_PAGES
    ) -> None:
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._closed: OrderedDict[str, CatalogKey | None] = OrderedDict()
        self._max = max_sessions
        self._idle_ns = idle_ns
        self._max_pages = max_pages

    def __len__(self) -> int:
        return len(self._sessions)

    def late(self, key: str, now: int) -> Session | None:
        """For a released session ``key``: a fresh session that is never stored, carrying the
        server identity it had (join it to that server to judge the span); else ``None``."""
        if key not in self._closed:
            return None
        server = ServerIdentity(catalog=self._closed[key])
        return Session(key, now, self._max_pages, server=server, closing=True)

    def touch(self, key: str, now: int) -> Session:
        """The session for ``key`` (created when new), marked as used at ``now``."""
        session = self._sessions.get(key)
        if session is not None:
            self._sessions.move_to_end(key)
            session.last_seen = max(session.last_seen, now)
            return session
        self._expire(now)
        session = Session(key=key, last_seen=now, max_pages=self._max_pages)
        self._sessions[key] = session
        while len(self._sessions) > self._max:
            self._sessions.popitem(last=False)[1].leave()
        return session

    def _expire(self, now: int) -> None:
        horizon = now - self._idle_ns
        while self._sessions:
            oldest = next(iter(self._sessions.values()))
            if oldest.last_seen >= horizon:
                return
            self._sessions.popitem(last=False)[1].leave()

    def release(self, key: str) -> None:
        """Forget a closed session (its key stays known as closed, bounded)."""
        session = self._sessions.pop(key, None)
        if session is not None:
            session.leave()
            self._closed[key] = session.server.catalog
            while len(self._closed) > self._max:
                self._closed.popitem(last=False)

    def clear(self) -> None:
        """Forget everything (shutdown)."""
        self._sessions.clear()
        self._closed.clear()
