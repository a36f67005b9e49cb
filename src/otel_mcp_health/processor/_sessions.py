"""Bounded per-session state of the span processor (private).

Catalog convergence and the session contract judge a *sequence* of spans: the handshake, the
``tools/list`` pages of each traversal, ``list_changed`` signals, installs, earlier calls. The
processor keeps, per session key, only what the core classifiers need to judge the next span:

* the handshake evidence of the session (the latest successful ``initialize``/``server/discover``);
* its traversals as chain facts walked page by page, never the pages
  (:mod:`otel_mcp_health.processor._traversals`): the open ones (concurrent traversals of one
  session are told apart; a bounded few, one 8-byte cursor hash per page up to the page cap
  each), the latest one started (possibly unfinished) and the last complete one (the only two
  :func:`otel_mcp_health.core.catalog.classify_catalog` ever looks at), so a session's state
  grows neither with the number of pages nor with traversals left unfinished;
* the latest ``list_changed`` arrival, and the first signal not yet followed by a converged
  catalog (for the convergence-lag histogram);
* the client digest of the latest install, the call-time contract findings since the last
  complete traversal, and the last authorization failure (cleared by the next authorized
  success).

Silent calls awaiting reconciliation and open incidents are kept by the processor rather than per
session (:mod:`otel_mcp_health.processor._incidents`): a reconciliation or a healthy call often
comes after the session that failed has closed. What the sessions of one server share is in
:mod:`otel_mcp_health.processor._servers`; the bounded store of sessions is
:mod:`otel_mcp_health.processor._store`.

Everything is bounded: a session holds a fixed number of small records (:data:`MAX_FINDINGS`
findings at most, plus one of each new kind).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from otel_mcp_health import attributes as A
from otel_mcp_health.core.catalog import chain_defect
from otel_mcp_health.core.evidence import (
    AuthorizationEvidence,
    CatalogEvidence,
    Discovery,
    HandshakeEvidence,
    InstallCheck,
    Page,
    RefreshPolicy,
    ToolCallCheck,
)
from otel_mcp_health.core.reasons import Reason
from otel_mcp_health.core.rules import Decision
from otel_mcp_health.core.server import ServerIdentity
from otel_mcp_health.core.traversal import DEFAULT_MAX_PAGES, CursorChain
from otel_mcp_health.core.vocabulary import Verdict
from otel_mcp_health.processor._freshness import Freshness
from otel_mcp_health.processor._memo import SessionMemo
from otel_mcp_health.processor._repeats import SessionRepeats
from otel_mcp_health.processor._servers import ServerCatalog
from otel_mcp_health.processor._traversals import (
    TraversalFacts,
    closed,
    continued,
    judged_latest,
    opened,
)

#: Call-time contract findings kept per session (the first of each kind decides the verdict).
MAX_FINDINGS = 8


@dataclass(slots=True, eq=False)
class Session:
    """What the processor remembers about one MCP client session."""

    key: str
    last_seen: int
    max_pages: int = DEFAULT_MAX_PAGES
    #: The session's server as its spans name it: its incident scope (incidents, retry budgets),
    #: its exported label (metric labels) and, from its handshake or install span, the catalog
    #: key its sessions share a catalog by.
    server: ServerIdentity = field(default_factory=ServerIdentity)
    handshake: HandshakeEvidence | None = None
    #: The traversal started last (finished or not): what the catalog rules call the latest.
    latest: TraversalFacts | None = None
    #: The traversals still waiting for a page, oldest first (at most
    #: ``_traversals.MAX_OPEN_TRAVERSALS``; a tuple: the empty one a session usually holds costs
    #: nothing).
    open_traversals: tuple[TraversalFacts, ...] = ()
    #: The last complete discovery: of two completed concurrently, the one started last.
    complete: Discovery | None = None
    last_signal: int | None = None
    pending_signal: int | None = None
    client_digest: str | None = None
    client_digest_error: str | None = None
    client_install: InstallCheck | None = None
    findings: tuple[ToolCallCheck, ...] = ()
    #: The server's complete discovery the findings were checked against when the session
    #: inherited it (a newer one makes them moot, as a traversal of its own does).
    findings_against: Discovery | None = None
    auth_failure: AuthorizationEvidence | None = None
    #: The verdict of the session's handshake when it was answered but unhealthy (an
    #: incompatible session): the session's readiness without a call, whatever its catalog.
    unhealthy_handshake: Decision[Verdict] | None = None
    #: The session's end span arrived; released when its last open call span ends.
    closing: bool = False
    #: Where the session hears ``list_changed`` (from its handshake span), how many of its GET or
    #: ``subscriptions/listen`` streams are attached now, and :meth:`ServerCatalog.hearing` when
    #: its own last complete discovery was made (docs/model.md#scope).
    channel: str = A.CHANNEL_SESSION
    channels_open: int = 0
    #: Its own stream ended while open (stdio server exited, SSE stream dropped): no hearing.
    stream_ended: bool = False
    heard_since: int | None = None
    #: The catalog state the sessions of its server share (joined by the server's catalog key).
    server_catalog: ServerCatalog | None = None
    #: Bumped whenever evidence the catalog verdict reads changes (pages, signals, installs,
    #: findings): a memoized catalog verdict is valid for one version (docs/model.md#catalog).
    version: int = 0
    #: Bumped by every change of what a call's judgement reads of the session: each
    #: :attr:`version`, the handshake, the authorization failure that carries. A memoized call
    #: judgement is valid for one generation (and one version of its server's catalog).
    generation: int = 0
    #: What the engine memoizes for this session (read and written by
    #: :mod:`otel_mcp_health.processor._memo` only).
    memo: SessionMemo = field(default_factory=SessionMemo)
    #: The call judgements kept for this generation (read and written by
    #: :mod:`otel_mcp_health.processor._repeats` only).
    repeats: SessionRepeats = field(default_factory=SessionRepeats)

    def _changed(self) -> None:
        """Evidence the catalog verdict reads changed."""
        self.version += 1
        self.generation += 1

    # -- catalog -------------------------------------------------------------------------------
    def add_page(
        self,
        page: Page,
        *,
        first: bool,
        started_at: int | None,
        ended_at: int | None,
        digest: str | None,
        digest_error: str | None,
    ) -> bool:
        """Add an application page; return whether it ended its traversal (complete or not).

        A first page (index 0, no cursor) starts a traversal, the latest; a later page continues
        its own (:func:`._traversals.continued`). What the catalog rules then call the latest:
        :func:`._traversals.judged_latest` (docs/model.md#concurrent-traversals).
        """
        traversal = None if first else continued(self.open_traversals, self.latest, page)
        if traversal is None:
            traversal = TraversalFacts(started_at=started_at, chain=CursorChain(self.max_pages))
            self.latest = traversal
            self.open_traversals = opened(self.open_traversals, traversal)
        final = traversal.walk(page)
        self._changed()
        if final:
            self.open_traversals = closed(self.open_traversals, traversal)
        if page.next_cursor is None and not page.failed:
            self._completed(traversal.complete(ended_at, digest, digest_error))
        elif self.server_catalog is not None:
            self.server_catalog.progressed(traversal.discovery())
        return final

    def _completed(self, discovery: Discovery) -> None:
        """A traversal reached a page without ``nextCursor``: a complete discovery of the
        session and its server, unless its chain has a defect."""
        server = self.server_catalog
        if chain_defect(discovery) is not None:
            if server is not None:  # ended on a gap or a loop: the server sees it too
                server.progressed(discovery)
            return
        if self._started_last(discovery):
            self.complete = discovery
            self.findings = ()  # earlier findings were checked against an older catalog
            self.heard_since = server.hearing() if server is not None else None
        if server is not None:
            server.discovered(discovery, list_changed=self._list_changed())

    def _started_last(self, discovery: Discovery) -> bool:
        """Whether a complete ``discovery`` started no earlier than the session's last one."""
        complete = self.complete
        return complete is None or (discovery.started_at or 0) >= (complete.started_at or 0)

    def set_install(
        self, digest: object, error: object, install: InstallCheck | None = None
    ) -> None:
        """An install was reported: its digest, or why it has none (never compared then), and
        its tool-by-tool comparison with a discovery when the instrumentation made one."""
        if isinstance(digest, str):
            self.client_digest, self.client_digest_error = digest, None
            self.client_install = install
        else:
            self.client_digest, self.client_install = None, None
            self.client_digest_error = (
                error if isinstance(error, str) else Reason.DIGEST_UNAVAILABLE
            )
        if (server := self.server_catalog) is not None:
            server.installed(self.client_digest, self.client_digest_error, self.client_install)
        self._changed()

    def _install(self) -> tuple[str | None, str | None, InstallCheck | None]:
        """What this session exposes: its own install, else (judged on its server's discovery)
        what the agent installed from that server."""
        own = self.client_digest is not None or self.client_digest_error is not None
        if own or not self.inherits or self.server_catalog is None:
            return self.client_digest, self.client_digest_error, self.client_install
        shared = self.server_catalog
        return shared.client_digest, shared.client_digest_error, shared.client_install

    def answered(self, handshake: HandshakeEvidence) -> None:
        """The session's handshake was answered; over the network that is an authorized
        exchange that succeeded, so an earlier authorization failure no longer carries."""
        self.handshake = handshake
        self.generation += 1
        if isinstance(handshake.authorization, AuthorizationEvidence):
            self.auth_failure = None

    def authorization(self, failure: AuthorizationEvidence | None) -> None:
        """The authorization failure that carries to the session's next calls (``None``: an
        authorized exchange succeeded since)."""
        if failure is not self.auth_failure:
            self.auth_failure = failure
            self.generation += 1

    def add_signal(self, at: int) -> None:
        """A ``notifications/tools/list_changed`` arrived at ``at``."""
        self.last_signal = at if self.last_signal is None else max(self.last_signal, at)
        if self.pending_signal is None:
            self.pending_signal = at
        if self.server_catalog is not None:
            self.server_catalog.signal(at)
        self._changed()

    def join(self, catalog: ServerCatalog) -> None:
        """The handshake named this session's server: share its catalog state from now on."""
        if self.server_catalog is not catalog:
            self.leave()
            self.server_catalog = catalog
            self._changed()
        self.update_listening()

    def channel_changed(self, *, opened: bool, channel: str | None = None) -> None:
        """A GET or ``subscriptions/listen`` stream attached or ended, or its own stream ended."""
        self.stream_ended |= channel == A.CHANNEL_SESSION and not opened
        if channel != A.CHANNEL_SESSION:
            self.channels_open = max(0, self.channels_open + (1 if opened else -1))
        self._changed()
        self.update_listening()

    def hears(self) -> bool:
        """Whether the session can hear ``list_changed`` now: the server advertised it and the
        session's notification channel is alive (its own stream while it is open)."""
        alive = self.channel == A.CHANNEL_SESSION and not self.stream_ended
        alive = alive or self.channels_open > 0
        return alive and self._list_changed() is True

    def update_listening(self) -> None:
        """Count the session among its server's listeners exactly while it :meth:`hears`."""
        if self.server_catalog is not None:
            if self.hears():
                self.server_catalog.listen(self.key)
            else:
                self.server_catalog.leave(self.key)

    def leave(self) -> None:
        """The session is gone (ended, evicted or expired): it no longer hears its server."""
        if self.server_catalog is not None:
            self.server_catalog.leave(self.key)

    @property
    def inherits(self) -> bool:
        """Whether this session, having listed nothing itself, is judged on its server's lists."""
        shared = self.server_catalog
        return self.latest is None and shared is not None and shared.latest is not None

    @property
    def inherited(self) -> Discovery | None:
        """The server's complete discovery this session is judged against, if any."""
        server = self.server_catalog
        return server.complete if self.inherits and server is not None else None

    def add_finding(self, finding: ToolCallCheck) -> None:
        """Keep a call-time contract finding (bounded). The first finding of each kind decides
        (an unknown tool outranks a missing argument), so one of a new kind is kept past the
        cap: at most :data:`MAX_FINDINGS` plus one per kind."""
        if self.inherits and self.findings_against is not self.inherited:
            self.findings, self.findings_against = (), self.inherited
        kinds = {kept.contract for kept in self.findings}
        if len(self.findings) < MAX_FINDINGS or finding.contract not in kinds:
            self.findings = (*self.findings, finding)
            self._changed()

    def dated(self) -> Freshness | int:
        """What the bounded refresh policy reads of the session (:func:`._freshness.freshness`):
        :attr:`Freshness.HEARD` or :attr:`Freshness.UNDATED` whatever the time, else when the
        catalog judged by age was completed (ns). The same for one :attr:`generation` and one
        version of its server."""
        if self._catalog_list_changed() is True:
            return Freshness.HEARD
        inherited = self.inherited
        if inherited is not None:
            completed = inherited.completed_at
        else:
            latest = self._latest()
            completed = latest.completed_at if latest is not None else None
        return Freshness.UNDATED if completed is None else completed

    def _list_changed(self) -> bool | None:
        capabilities = self.handshake.capabilities if self.handshake is not None else None
        tools = capabilities.get("tools") if capabilities is not None else None
        return tools.get("listChanged") is True if isinstance(tools, dict) else None

    def _catalog_list_changed(self) -> bool | None:
        """``tools.listChanged`` as the catalog rules may trust it: only while a session of the
        server has heard every change since the catalog was discovered (a listener stayed
        open); otherwise the catalog is held to its maximum age (docs/model.md#scope)."""
        if self.inherits and self.server_catalog is not None:
            return self.server_catalog.inherited_list_changed()
        advertised = self._list_changed()
        if advertised is not True:
            return advertised
        return self.server_catalog is not None and self.server_catalog.heard(self.heard_since)

    def _discoveries(self) -> tuple[Discovery, ...]:
        if self.inherits and self.server_catalog is not None:
            return self.server_catalog.discoveries()
        discoveries: tuple[Discovery, ...] = () if self.complete is None else (self.complete,)
        latest = self._latest()
        if latest is not None and latest != self.complete:
            discoveries = (*discoveries, latest)
        return discoveries

    def _latest(self) -> Discovery | None:
        return judged_latest(self.latest, self.open_traversals, self.complete)

    def _last_signal(self) -> int | None:
        """The latest ``list_changed`` this session or any session of its server received."""
        shared = self.server_catalog.last_signal if self.server_catalog is not None else None
        if shared is None or self.last_signal is None:
            return shared if self.last_signal is None else self.last_signal
        return max(shared, self.last_signal)

    def catalog(self, now: int | None, max_age_s: float) -> CatalogEvidence:
        """The session's catalog evidence at ``now`` (docs/model.md#catalog,
        docs/evidence-format.md ``catalog``), with what its server's sessions share."""
        signal = self._last_signal()
        client_digest, client_digest_error, install = self._install()
        return CatalogEvidence(
            list_changed=self._catalog_list_changed(),
            refresh_policy=RefreshPolicy(max_age_seconds=max_age_s),
            now=now,
            notifications=(signal,) if signal is not None else (),
            discoveries=self._discoveries(),
            client_digest=client_digest,
            client_digest_error=client_digest_error,
            install=install,
            tool_calls=self._findings(),
        )

    def offered_catalog(self, now: int | None, max_age_s: float) -> CatalogEvidence:
        """:meth:`catalog` for a call judged on what its agent's model was offered
        (docs/model.md#agents): that offer was compared with the server's latest complete
        discovery, made in any session, so when another session of the server completed a
        discovery after this session's own, the catalog is the server's (as if inherited)."""
        evidence = self.catalog(now, max_age_s)
        server = self.server_catalog
        shared = server.complete if server is not None else None
        own = self.complete
        if self.inherits or server is None or shared is None or shared is own:
            return evidence
        if own is not None and (shared.started_at or 0) <= (own.started_at or 0):
            return evidence
        return replace(
            evidence,
            list_changed=server.inherited_list_changed(),
            discoveries=server.discoveries(),
            tool_calls=(),  # checked against this session's older discovery: moot
        )

    def _findings(self) -> tuple[ToolCallCheck, ...]:
        """The findings checked against the catalog the session is judged on (an inheriting
        session's are moot once its server completed a newer discovery)."""
        if self.inherits and self.findings_against is not self.inherited:
            return ()
        return self.findings
