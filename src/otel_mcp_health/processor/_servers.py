"""Catalog state per server, shared by the sessions of that server (private).

A catalog belongs to the process's view of one server, not to one session (docs/model.md#scope):
agent frameworks list tools in one session and call them in others (a fresh session per call,
reconnects). A server's catalog is named by its catalog key
(:class:`~otel_mcp_health.core.server.CatalogKey`: the keyed hash of its transport target, the
server name and version, as its handshake or install span names them). Per server the processor
keeps the last complete discovery of any of its sessions, the latest ``list_changed`` any of them
received, and which open sessions can still hear a change (*listeners*: their notification
channel is alive, not merely advertised; docs/model.md#scope):

* a session with no discovery of its own is judged against the server's last complete discovery
  (*inherited*, exported as ``mcp_health.catalog.inherited`` and its age);
* a signal received by one session makes the catalog stale for every session of the server;
* what an agent framework installed from the server (an ``mcp_health.install`` span, which names
  the server too) is what a session without a discovery or an install of its own exposes;
* while no listener is open, the server may change unheard, so a catalog discovered before (or
  during) such a silence is held to the bounded refresh policy (its maximum age), inherited or
  the session's own, until a complete discovery made while a listener is open.

Bounded: at most :data:`MAX_SERVERS` servers (least recently used forgotten first), each a few
small records and the keys of its open listening sessions (their size: docs/performance.md,
"The processor's state"). The processor's lock guards every use. Worker processes do not share it:
each process judges its own sessions.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from otel_mcp_health.core.bounds import MAX_SERVERS
from otel_mcp_health.core.evidence import Discovery, InstallCheck
from otel_mcp_health.core.server import CatalogKey


@dataclass(slots=True, eq=False)
class ServerCatalog:
    """What every session of one server shares about its catalog."""

    complete: Discovery | None = None
    #: The latest traversal any session of the server made, finished or not (a client that reads
    #: only the first page leaves it ``incomplete``).
    latest: Discovery | None = None
    #: Whether the session that made that discovery was told of changes (``tools.listChanged``).
    list_changed: bool | None = None
    last_signal: int | None = None
    #: Open sessions of the server whose notification channel is alive (they hear changes).
    listeners: set[str] = field(default_factory=set)
    #: How many times the server was left with no listener: a catalog discovered while listeners
    #: were open stays heard until this count changes (:meth:`hearing`, :meth:`heard`).
    silences: int = 0
    #: :meth:`hearing` when the last complete discovery was made.
    heard_since: int | None = None
    #: What the agent installed from this server (an ``mcp_health.install`` span of any of its
    #: sessions): its digest, or why it has none.
    client_digest: str | None = None
    client_digest_error: str | None = None
    #: That install compared tool by tool with a discovery (when the instrumentation could).
    client_install: InstallCheck | None = None
    #: Bumped on every change the sessions' catalog verdicts read (their memo key).
    version: int = 0

    def installed(
        self, digest: str | None, error: str | None, install: InstallCheck | None = None
    ) -> None:
        """A framework reported the tools it hands its model from this server."""
        self.client_digest, self.client_digest_error = digest, error
        self.client_install = install
        self.version += 1

    def discovered(self, discovery: Discovery, *, list_changed: bool | None) -> None:
        """A session of this server completed a discovery (of two complete at once, the one
        started last is the server's: the core judges against it, and so does the age)."""
        complete = self.complete
        if complete is None or (discovery.started_at or 0) >= (complete.started_at or 0):
            self.complete, self.list_changed = discovery, list_changed
            self.heard_since = self.hearing()
        self._started(discovery)
        self.version += 1

    def progressed(self, traversal: Discovery) -> None:
        """A session of this server listed a page: its traversal as it stands."""
        self._started(traversal)
        self.version += 1

    def _started(self, traversal: Discovery) -> None:
        """The latest traversal is the last one started (docs/model.md#catalog), whichever
        session's page arrived last: two sessions may list at once."""
        latest = self.latest
        if latest is None or (traversal.started_at or 0) >= (latest.started_at or 0):
            self.latest = traversal

    def discoveries(self) -> tuple[Discovery, ...]:
        """What a session that made no discovery of its own is judged against."""
        found = () if self.complete is None else (self.complete,)
        if self.latest is not None and self.latest != self.complete:
            found = (*found, self.latest)
        return found

    def signal(self, at: int) -> None:
        """A session of this server received ``list_changed`` at ``at``."""
        self.last_signal = at if self.last_signal is None else max(self.last_signal, at)
        self.version += 1

    def listen(self, session_key: str) -> None:
        """A session of this server can hear changes now (its channel is alive)."""
        self.listeners.add(session_key)

    def leave(self, session_key: str) -> None:
        """A session of this server no longer hears changes (gone, or its channel ended): with
        the last listener, a silence starts."""
        if session_key in self.listeners:
            self.listeners.discard(session_key)
            if not self.listeners:
                self.silences += 1
                self.version += 1

    def hearing(self) -> int | None:
        """What a discovery completed now is heard from: the silence count while a listener is
        open, ``None`` while none is (a change may already have gone unheard)."""
        return self.silences if self.listeners else None

    def heard(self, since: int | None) -> bool:
        """Whether a listener stayed open from :meth:`hearing` ``since`` until now."""
        return since is not None and since == self.silences

    def inherited_list_changed(self) -> bool | None:
        """``tools.listChanged`` as an inherited catalog may trust it: not across a silence."""
        return self.list_changed if self.heard(self.heard_since) else False


class ServerCatalogs:
    """Server catalogs by catalog key, LRU-bounded."""

    def __init__(self, capacity: int = MAX_SERVERS) -> None:
        self._servers: OrderedDict[CatalogKey, ServerCatalog] = OrderedDict()
        self._capacity = capacity

    def __len__(self) -> int:
        return len(self._servers)

    def touch(self, key: CatalogKey) -> ServerCatalog:
        """The catalog of the server of ``key`` (created when new), marked as used."""
        server = self._servers.get(key)
        if server is None:
            server = self._servers[key] = ServerCatalog()
            while len(self._servers) > self._capacity:
                self._servers.popitem(last=False)
        else:
            self._servers.move_to_end(key)
        return server

    def clear(self) -> None:
        """Forget everything (shutdown)."""
        self._servers.clear()
