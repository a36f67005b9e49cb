"""The contract oracle: the verdicts the processor must export, derived from the spans alone.

An independent reading of docs/model.md (#catalog, #scope, #contract) for the differential test
(``test_engine_differential.py``). It shares no code with the processor's sessions, servers,
memo, incidents or engine: it keeps the whole history of the spans it was given, never any
incremental state, and for every span derives the verdict attributes from scratch by scanning
that history. What it does share is what both must read the same way: the evidence format (the
codec's ``decode_*`` functions and the core's evidence records) and the pure core classifiers
(``classify_catalog``, ``classify_session``, ``readiness``), the rules themselves. What it
re-derives is everything the processor keeps per session and per server:

* a session's handshake (the latest answered, not superseded one) and the server it names (the
  latest handshake or install that names one: its spans from then on are the server's);
* its own ``tools/list`` traversals, page by page (docs/model.md#concurrent-traversals: a first
  page starts one; a later page continues the open one whose last ``nextCursor`` it is, of two
  the one started last, else the one started last; at most 8 open, the oldest dropped first),
  each handed to the core whole; the latest is the one started last, unless it is still walking
  without a defect while the session's complete discovery ended after it started;
* inheritance: a session that listed nothing itself is judged against its server's traversals,
  the *latest* one any session of the server started and the *last complete* one (of two
  that completed while both were under way, the one started last: it saw the server later);
* the signals of the session and of every session of its server;
* who can hear a change (an open session of the server whose handshake advertised
  ``tools.listChanged`` and whose notification channel is alive): a catalog, inherited or the
  session's own, is held to the maximum age once, since its complete discovery, no such session
  was open;
* what the agent installed (the session's own install, else, when it inherits, its server's);
* the call-time contract findings since the complete discovery the session is judged against;
* the authorization failure a call carries (one failed and none passed since);
* a closed session: released once its end span has arrived and none of its calls is still open
  (a call's span may end after its session's, waiting for the outcome receipt: the session's
  facts stay for it); a span after the release belongs to its server and never re-opens it, and
  a call then carries its own call-time finding only.

Cost is quadratic in the spans replayed: for test streams of a few dozen spans only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from opentelemetry.sdk.trace import ReadableSpan

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.calls import CallResult
from otel_mcp_health.core.catalog import CatalogResult, chain_defect, classify_catalog
from otel_mcp_health.core.contract import readiness
from otel_mcp_health.core.evidence import (
    AuthorizationEvidence,
    CatalogEvidence,
    Discovery,
    HandshakeEvidence,
    InstallCheck,
    Page,
    RefreshPolicy,
    SessionEvidence,
)
from otel_mcp_health.core.reasons import Reason
from otel_mcp_health.core.rules import Decision
from otel_mcp_health.core.server import CatalogKey
from otel_mcp_health.core.session import classify_session
from otel_mcp_health.core.vocabulary import FirstFailedLayer, Layer, LayerStatus

#: The published MCP versions (docs/model.md#contract), passed to the processor too.
SUPPORTED_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
_HANDSHAKE_METHODS: Final = frozenset({"initialize", "server/discover"})

#: Open traversals a session keeps (docs/model.md#concurrent-traversals).
_MAX_OPEN_TRAVERSALS: Final = 8

#: The exported attributes the oracle derives (everything else on a span is not its business:
#: incidents, metrics labels, progress summaries).
JUDGED: Final = (
    A.VERDICT,
    A.REASON,
    A.NEXT_ACTION,
    A.CALL_FIRST_FAILED_LAYER,
    A.CALL_REASON,
    A.EFFECT_UNKNOWN,
    *(A.layer_attribute(layer.value) for layer in Layer),
    A.CATALOG_VERDICT,
    A.CATALOG_REASON,
    A.CATALOG_CLIENT_SOURCE,
    A.CATALOG_MAX_AGE_S,
    A.CATALOG_DIGEST,
    A.CATALOG_CLIENT_DIGEST,
    A.CATALOG_INHERITED,
    A.CATALOG_INHERITED_AGE_S,
    A.READINESS_VERDICT,
    A.READINESS_REASON,
    A.READINESS_NEXT_ACTION,
)


@dataclass(frozen=True)
class Seen:
    """One span as evidence: where it sits in the history, its session and what it is (with
    what the oracle reads of it, decoded once)."""

    index: int
    key: str
    kind: str  # handshake, page, signal, install, call, end, other
    span: ReadableSpan
    attrs: Mapping[str, Any]

    @functools.cached_property
    def failed(self) -> bool:
        """A handshake span whose handshake itself failed (it establishes no session)."""
        return self.kind == "handshake" and _handshake_result(self.handshake).rule == (
            "handshake_failed"
        )

    @functools.cached_property
    def handshake(self) -> HandshakeEvidence:
        return _codec.decode_handshake(self.attrs, SUPPORTED_VERSIONS)

    @functools.cached_property
    def list_changed(self) -> bool | None:
        """``tools.listChanged`` as a handshake advertised it (``None``: no capabilities)."""
        capabilities = self.handshake.capabilities
        tools = capabilities.get("tools") if capabilities is not None else None
        return tools.get("listChanged") is True if isinstance(tools, dict) else None

    @functools.cached_property
    def catalog_key(self) -> CatalogKey | None:
        return _codec.decode_catalog_key(self.attrs)

    @functools.cached_property
    def page(self) -> Page:
        return _codec.decode_page(self.attrs)

    @property
    def start(self) -> int:
        return self.span.start_time or 0

    @property
    def end(self) -> int:
        return self.span.end_time or 0


def _kind(span: ReadableSpan, attrs: Mapping[str, Any]) -> str:
    method = attrs.get(A.MCP_METHOD_NAME)
    if span.name == A.SESSION_END_SPAN_NAME:
        return "end"
    if span.name == A.INSTALL_SPAN_NAME:
        return "install"
    if method == "tools/call":
        return "call"
    if method == "tools/list":
        return "other" if _codec.decode_origin(attrs) == A.ORIGIN_INTERNAL else "page"
    if method in _HANDSHAKE_METHODS or span.name == A.CONNECT_SPAN_NAME:  # a refused connect too
        return "other" if _codec.decode_superseded(attrs) else "handshake"
    if method == A.NOTIFICATION_SPAN_METHOD:
        return "signal"
    return "other"


@dataclass(frozen=True, slots=True)
class Traversal:
    """A ``tools/list`` traversal of one session: its pages as recorded, in order."""

    session: str
    pages: tuple[Seen, ...]
    #: Still open: not ended (a page without ``nextCursor`` or a failed page) nor dropped past
    #: the bound on open traversals.
    open: bool = False

    @property
    def first(self) -> int:
        """Where it started in the history."""
        return self.pages[0].index

    def views(self) -> tuple[View, ...]:
        """How the core reads it: as it stood when it last completed cleanly (a page without
        ``nextCursor`` reached with no defect on the way), if it did and has grown since, then
        as it stands."""
        views: list[View] = []
        for end, seen in enumerate(self.pages):
            if seen.page.next_cursor is None and not seen.page.failed:
                view = View(_discovery(self.pages[: end + 1], seen), seen, self.session)
                if chain_defect(view.discovery) is None:
                    views = [view]
        if not views or views[0].completion is not self.pages[-1]:
            finished = [s for s in self.pages if s.page.next_cursor is None and not s.page.failed]
            done = finished[-1] if finished else None
            views.append(View(_discovery(self.pages, done), None, self.session))
        return tuple(views)


@dataclass(frozen=True, slots=True)
class View:
    """A traversal as handed to the core; ``completion``: the page that completed it cleanly."""

    discovery: Discovery
    completion: Seen | None
    session: str


def _discovery(pages: tuple[Seen, ...], done: Seen | None) -> Discovery:
    digest, error = _codec.decode_digest(done.attrs) if done is not None else (None, None)
    return Discovery(
        started_at=pages[0].start,
        completed_at=done.end if done is not None else None,
        pages=tuple(seen.page for seen in pages),
        digest=digest,
        digest_error=error,
    )


def _judged_against(views: list[View]) -> View | None:
    """The complete discovery the core judges against: the last clean one."""
    return next((v for v in reversed(views) if v.completion is not None), None)


def _stands_for_latest(against: View | None, latest: Traversal, current: View) -> bool:
    """Whether the session's complete discovery ``against`` is what the rules call its latest
    traversal: ``latest`` (the one started last, ``current`` as it stands) is still open and
    walking without a defect, and ``against`` ended after it started (the two ran concurrently:
    that discovery is what the agent got)."""
    if against is None or against.discovery.completed_at is None or not latest.open:
        return False
    walking = chain_defect(current.discovery) == Reason.CURSOR_REMAINING
    return walking and against.discovery.completed_at >= latest.pages[0].start


class ContractOracle:
    """Feed it every span in the order the processor sees them; :meth:`judge` returns the
    verdict attributes (of :data:`JUDGED`) the processor must export on that span."""

    def __init__(self, *, max_age_s: float = 300.0) -> None:
        self._max_age_s = max_age_s
        self._history: list[Seen] = []
        #: The oracle's own call judgements by history index (the authorization a later call
        #: carries reads them); a pure function of the history before that index.
        self._calls: dict[int, CallResult] = {}
        #: Answers about a prefix of the history, which never changes once written (speed only).
        self._answers: dict[tuple[Any, ...], Any] = {}
        #: Call span id -> (its session key, how many spans had ended when it started).
        self._starts: dict[int, tuple[str, int]] = {}
        #: Session key -> the history index of the span after which it was released.
        self._released: dict[str, int] = {}

    def _cached(self, question: tuple[Any, ...], answer: Callable[[], Any]) -> Any:
        if question not in self._answers:
            self._answers[question] = answer()
        return self._answers[question]

    # ------------------------------------------------------------------------------------------
    # The entry point
    # ------------------------------------------------------------------------------------------
    def started(self, span: ReadableSpan) -> None:
        """A span started: a ``tools/call`` of a session is open from now until it ends."""
        attrs = span.attributes or {}
        key = attrs.get(A.SESSION_KEY)
        if isinstance(key, str) and attrs.get(A.MCP_METHOD_NAME) == "tools/call" and span.context:
            self._starts[span.context.span_id] = (key, len(self._history))

    def judge(self, span: ReadableSpan) -> dict[str, Any] | None:
        """The expected verdict attributes of ``span`` (``None``: not an MCP span of a
        session)."""
        attrs = dict(span.attributes or {})
        key = attrs.get(A.SESSION_KEY)
        if not isinstance(key, str):
            return None
        seen = Seen(len(self._history), key, _kind(span, attrs), span, attrs)
        self._history.append(seen)
        judge = _JUDGES.get(seen.kind)
        verdicts = judge(self, seen) if judge is not None else {}
        if key not in self._released and self._closes(seen):
            self._released[key] = seen.index
        return verdicts

    def _closes(self, seen: Seen) -> bool:
        """Whether the session is released once ``seen`` is judged: its end span has arrived
        and none of its calls is open (a call that started before the end keeps the session's
        facts until it ends: its span may wait for the outcome receipt)."""
        if not any(s.kind == "end" for s in self._of(seen.key, seen.index)):
            return False
        ended = {s.span.context.span_id for s in self._history if s.span.context is not None}
        return not any(
            key == seen.key and span_id not in ended for span_id, (key, _) in self._starts.items()
        )

    # ------------------------------------------------------------------------------------------
    # Sessions, from the history
    # ------------------------------------------------------------------------------------------
    def _of(self, key: str, upto: int) -> list[Seen]:
        return [s for s in self._history[: upto + 1] if s.key == key]

    def _ended(self, key: str, before: int) -> bool:
        """The session was released before history index ``before``: its end span arrived and
        no call of it was open any more."""
        released = self._released.get(key)
        return released is not None and released < before

    def _open(self, key: str, upto: int) -> list[Seen]:
        """The spans of the session until it was released (none after)."""
        released = self._released.get(key, upto)
        return [s for s in self._of(key, min(upto, released)) if s.kind != "end"]

    def _handshake(self, key: str, upto: int) -> Seen | None:
        """The session's latest answered handshake (a failed one establishes nothing)."""
        found: Seen | None = self._cached(
            ("handshake", key, upto), lambda: self._find_handshake(key, upto)
        )
        return found

    def _find_handshake(self, key: str, upto: int) -> Seen | None:
        found = None
        for seen in self._open(key, upto):
            if seen.kind == "handshake" and not seen.failed:
                found = seen
        return found

    def _server(self, key: str, upto: int) -> CatalogKey | None:
        """The server the session's latest handshake (or install) that names one names."""
        found: str | None = self._cached(
            ("server", key, upto), lambda: self._find_server(key, upto)
        )
        return found

    def _find_server(self, key: str, upto: int) -> CatalogKey | None:
        server = None
        for seen in self._open(key, upto):
            if seen.kind in {"handshake", "install"} and not seen.failed:
                server = seen.catalog_key or server
        return server

    def _listening(self, key: str, server: CatalogKey, at: int) -> bool:
        """Whether the session could hear ``server``'s changes at history index ``at``: open,
        of that server, with a handshake that advertised ``tools.listChanged`` and a notification
        channel alive (its own stream, or more GET / listen streams attached than ended)."""
        if at == len(self._history) - 1:  # the span being judged may still release the session
            return self._find_listening(key, server, at)
        found: bool = self._cached(
            ("listening", key, server, at), lambda: self._find_listening(key, server, at)
        )
        return found

    def _find_listening(self, key: str, server: CatalogKey, at: int) -> bool:
        if self._ended(key, at + 1) or self._server(key, at) != server:
            return False
        handshake = self._handshake(key, at)
        if handshake is None or handshake.list_changed is not True:
            return False
        if _codec.decode_channel(handshake.attrs) == A.CHANNEL_SESSION:
            return True
        attached = 0
        for seen in self._of(key, at):
            opened = _codec.decode_channel_open(seen.attrs)
            if seen.span.name == A.CHANNEL_SPAN_NAME and opened is not None:
                attached = max(0, attached + (1 if opened else -1))
        return attached > 0

    def _heard_throughout(self, server: CatalogKey, since: int, upto: int) -> bool:
        """Some session of ``server`` could hear a change at every moment from ``since`` to
        ``upto`` (each span is a moment: the set of sessions changes only on spans)."""
        keys = {s.key for s in self._history[: upto + 1]}
        return all(
            any(self._listening(key, server, at) for key in keys) for at in range(since, upto + 1)
        )

    def _traversals(self, key: str, upto: int) -> list[Traversal]:
        """The session's traversals, in the order they started: a first page (index 0 or no
        cursor) starts one; a later page continues the open one whose last ``nextCursor`` it
        is (of two, the one started last), else the one started last, where it reads as the gap
        or the loop it is. A session keeps at most 8 open, the oldest dropped first."""
        traversals: list[list[Seen]] = []
        open_: list[list[Seen]] = []
        for seen in self._open(key, upto):
            if seen.kind != "page":
                continue
            page = seen.page
            first = _codec.decode_page_index(seen.attrs) == 0 or page.cursor is None
            waiting = [t for t in open_ if t[-1].page.next_cursor == page.cursor]
            if first or not traversals:
                pages: list[Seen] = []
                traversals.append(pages)
                open_ = [*open_, pages][-_MAX_OPEN_TRAVERSALS:]
            else:
                pages = waiting[-1] if waiting else traversals[-1]
            pages.append(seen)
            if page.failed or page.next_cursor is None:
                open_ = [t for t in open_ if t is not pages]
        return [
            Traversal(key, tuple(pages), open=any(t is pages for t in open_))
            for pages in traversals
        ]

    def _of_server(self, server: CatalogKey, upto: int, kinds: set[str]) -> list[Seen]:
        """Spans of the kinds given that sessions sent while of ``server``."""
        return [
            s
            for s in self._history[: upto + 1]
            if s.kind in kinds
            and (s.kind == "install" or not self._ended(s.key, s.index))
            and self._server_at(s) == server
        ]

    def _server_at(self, seen: Seen) -> CatalogKey | None:
        """The server a span belongs to: its session's at that moment (after the session's end,
        the one it had when it ended)."""
        return self._server(seen.key, seen.index)

    def _server_traversals(self, server: CatalogKey, upto: int) -> list[Traversal]:
        """Every traversal (its pages up to ``upto``) a session made while of ``server``: the
        server its session named at the traversal's latest page."""
        keys = {s.key for s in self._history[: upto + 1]}
        return [
            traversal
            for key in keys
            for traversal in self._traversals(key, upto)
            if self._server_at(traversal.pages[-1]) == server
        ]

    # ------------------------------------------------------------------------------------------
    # The catalog evidence a span is judged against
    # ------------------------------------------------------------------------------------------
    def _catalog(self, seen: Seen) -> tuple[CatalogEvidence, Inheritance | None]:
        """The catalog evidence of ``seen``'s session at ``seen`` (docs/model.md#scope), and
        what it inherits, if anything."""
        key, upto = seen.key, seen.index
        after_end = self._ended(key, upto)
        server = self._server(key, upto)
        own = [] if after_end else self._traversals(key, upto)
        installs = [s for s in self._of(key, upto) if s.kind == "install"]
        own_install = installs[-1] if installs else None
        handshake = self._handshake(key, upto)
        list_changed = handshake.list_changed if handshake is not None else None
        inherited = None if own else self._inheritance(server, upto)
        if own:
            views = [view for traversal in own for view in traversal.views()]
            against = _judged_against(views)
            discoveries = tuple(view.discovery for view in views)
            if _stands_for_latest(against, own[-1], views[-1]):
                assert against is not None
                discoveries = (*discoveries, against.discovery)  # the core judges the last one
            since = against.completion if against is not None else None
            if list_changed is True and (
                server is None
                or since is None
                or not self._heard_throughout(server, since.index, upto)
            ):
                list_changed = False  # its own catalog too: not across a silence
        elif inherited is not None:
            discoveries = inherited.discoveries
            list_changed = inherited.list_changed
            since = inherited.completion
            if own_install is None:
                own_install = inherited.install
        else:
            discoveries, since = (), None
        signals = [s.start for s in self._of(key, upto) if s.kind == "signal"]
        if server is not None:
            signals += [s.start for s in self._of_server(server, upto, {"signal"})]
        # A call after the release belongs to the server: of the session's findings, it carries
        # only its own (the session's earlier ones stay with the session).
        calls = [seen] if after_end else self._open(key, upto)
        findings = tuple(
            finding
            for s in calls
            if s.kind == "call"
            and (since is None or s.index > since.index)
            and (finding := _codec.decode_tool_call_check(s.attrs)) is not None
        )
        digest, error, install = _install(own_install)
        evidence = CatalogEvidence(
            list_changed=list_changed,
            refresh_policy=RefreshPolicy(max_age_seconds=self._max_age_s),
            now=seen.span.end_time,
            notifications=(max(signals),) if signals else (),
            discoveries=discoveries,
            client_digest=digest,
            client_digest_error=error,
            install=install,
            tool_calls=findings,
        )
        return evidence, inherited

    def _inheritance(self, server: CatalogKey | None, upto: int) -> Inheritance | None:
        """What a session of ``server`` that listed nothing itself is judged against."""
        if server is None:
            return None
        traversals = sorted(self._server_traversals(server, upto), key=lambda t: t.first)
        if not traversals:
            return None
        views = [view for traversal in traversals for view in traversal.views()]
        against = _judged_against(views)
        list_changed: bool | None = None
        completion = None
        if against is not None and against.completion is not None:
            completion = against.completion
            maker = self._handshake(against.session, completion.index)
            list_changed = maker.list_changed if maker is not None else None
            if not self._heard_throughout(server, completion.index, upto):
                list_changed = False  # a change may have gone unheard: held to the max age
        discoveries = tuple(view.discovery for view in views)
        installs = self._of_server(server, upto, {"install"})
        return Inheritance(
            discoveries=discoveries,
            list_changed=list_changed,
            completion=completion,
            install=installs[-1] if installs else None,
        )

    def _authorization_carried(self, seen: Seen) -> AuthorizationEvidence | None:
        """The session's last authorization failure, unless an authorized exchange (an answered
        handshake over the network, a call whose authorization passed) succeeded since
        (docs/model.md#contract, rule 1)."""
        carried = None
        for earlier in self._of(seen.key, seen.index - 1):
            if earlier.kind == "handshake" and not earlier.failed:
                if isinstance(earlier.handshake.authorization, AuthorizationEvidence):
                    carried = None  # an answered handshake over the network: authorized
            elif earlier.kind == "handshake":
                handshake = _codec.decode_handshake(earlier.attrs, SUPPORTED_VERSIONS)
                result = _handshake_result(handshake)
                if result.first_failed_layer is FirstFailedLayer.AUTHORIZATION and isinstance(
                    handshake.authorization, AuthorizationEvidence
                ):
                    carried = handshake.authorization
            elif earlier.kind == "call" and (judged := self._calls.get(earlier.index)):
                status = judged.layers.get(Layer.AUTHORIZATION)
                call = _codec.decode_call(earlier.attrs)
                if carried is not None and call.authorization is None:
                    call = replace(call, authorization=carried)
                if status is LayerStatus.FAILED and isinstance(
                    call.authorization, AuthorizationEvidence
                ):
                    carried = call.authorization
                elif status is LayerStatus.PASSED:
                    carried = None
        return carried

    # ------------------------------------------------------------------------------------------
    # Judging each kind of span
    # ------------------------------------------------------------------------------------------
    def _judge_catalog(self, seen: Seen) -> dict[str, Any]:
        evidence, _ = self._catalog(seen)
        result = classify_catalog(evidence)
        handshake = self._handshake(seen.key, seen.index)
        unhealthy = None
        if handshake is not None and not self._ended(seen.key, seen.index):
            decided = _handshake_result(
                _codec.decode_handshake(handshake.attrs, SUPPORTED_VERSIONS)
            )
            if decided.rule == "incompatible_session":
                unhealthy = Decision(decided.verdict, decided.reason, decided.next_action)
        ready = readiness(result, unhealthy)
        return {
            **_catalog_attributes(result),
            A.READINESS_VERDICT: ready.verdict.value,
            A.READINESS_REASON: str(ready.reason),
            A.READINESS_NEXT_ACTION: ready.next_action.value,
        }

    def _judge_page(self, seen: Seen) -> dict[str, Any]:
        page = seen.page
        if page.failed or page.next_cursor is None:  # it ends its traversal
            return self._judge_catalog(seen)
        return {}

    def _judge_handshake(self, seen: Seen) -> dict[str, Any]:
        result = _handshake_result(_codec.decode_handshake(seen.attrs, SUPPORTED_VERSIONS))
        if result.rule not in {"handshake_failed", "incompatible_session"}:
            return {}
        attrs = _decision(result)
        if result.first_failed_layer is not FirstFailedLayer.NONE:
            attrs.update(_layers(result))
        return attrs

    def _judge_call(self, seen: Seen) -> dict[str, Any]:
        attrs, span = seen.attrs, seen.span
        if _codec.decode_cancelled(attrs) and attrs.get(A.TRANSPORT_REQUEST_WRITTEN) is False:
            return {}  # cancelled before the request was written: no call
        call = _codec.decode_call(attrs)
        carried = self._authorization_carried(seen)
        if call.authorization is None and carried is not None:
            call = replace(call, authorization=carried)
        catalog, inherited = self._catalog(seen)
        handshake = self._handshake(seen.key, seen.index)
        progress = _codec.decode_progress(
            attrs,
            span.events,
            started_at=span.start_time,
            now=span.end_time,
            completed_at=span.end_time,
        )
        outcome = classify_session(
            SessionEvidence(
                handshake=_codec.decode_handshake(handshake.attrs, SUPPORTED_VERSIONS)
                if handshake is not None
                else None,
                catalog=catalog,
                call=call,
                progress=progress,
            )
        )
        self._calls[seen.index] = outcome.call
        verdicts = _decision(outcome.call)
        verdicts[A.CALL_REASON] = str(outcome.call.reason)
        verdicts.update(_layers(outcome.call))
        if outcome.call.effect_unknown:
            verdicts[A.EFFECT_UNKNOWN] = True
        if outcome.catalog is not None:
            verdicts.update(_catalog_attributes(outcome.catalog))
        if inherited is not None:
            verdicts[A.CATALOG_INHERITED] = True
            completion = inherited.completion
            if completion is not None and span.end_time is not None:
                age = (span.end_time - completion.end) / 1e9
                verdicts[A.CATALOG_INHERITED_AGE_S] = max(0.0, age)
        return verdicts


@dataclass(frozen=True, slots=True)
class Inheritance:
    """What a session that listed nothing itself is judged against (docs/model.md#scope)."""

    discoveries: tuple[Discovery, ...]
    list_changed: bool | None
    #: The page that completed the server's last complete discovery.
    completion: Seen | None
    #: The server's latest install, by any of its sessions.
    install: Seen | None


_JUDGES: Final[dict[str, Callable[[ContractOracle, Seen], dict[str, Any]]]] = {
    "handshake": ContractOracle._judge_handshake,
    "page": ContractOracle._judge_page,
    "signal": ContractOracle._judge_catalog,
    "install": ContractOracle._judge_catalog,
    "call": ContractOracle._judge_call,
}


# ----------------------------------------------------------------------------------------------
# Small readings of the evidence and of the core's results
# ----------------------------------------------------------------------------------------------
def _handshake_result(handshake: HandshakeEvidence) -> CallResult:
    return classify_session(SessionEvidence(handshake=handshake)).call


def _install(install: Seen | None) -> tuple[str | None, str | None, InstallCheck | None]:
    """An install's digest, or why it has none, and its tool-by-tool comparison with a
    discovery (an install without a digest is compared with nothing)."""
    if install is None:
        return None, None, None
    digest, error = _codec.decode_digest(install.attrs, of="client")
    if isinstance(digest, str):
        return digest, None, _codec.decode_install_check(install.attrs)
    return None, error if isinstance(error, str) else Reason.DIGEST_UNAVAILABLE, None


def _decision(result: CallResult) -> dict[str, Any]:
    return {
        A.VERDICT: result.verdict.value,
        A.NEXT_ACTION: result.next_action.value,
        A.REASON: str(result.reason),
        A.CALL_FIRST_FAILED_LAYER: result.first_failed_layer.value,
    }


def _layers(result: CallResult) -> dict[str, Any]:
    return {A.layer_attribute(layer.value): status.value for layer, status in result.layers.items()}


def _catalog_attributes(result: CatalogResult) -> dict[str, Any]:
    known = (
        (A.CATALOG_MAX_AGE_S, result.max_age_seconds),
        (A.CATALOG_DIGEST, result.discovered_digest),
        (A.CATALOG_CLIENT_DIGEST, result.client_digest),
    )
    return {
        A.CATALOG_VERDICT: result.verdict.value,
        A.CATALOG_REASON: str(result.reason),
        A.CATALOG_CLIENT_SOURCE: result.client_source.value,
        **{name: value for name, value in known if value is not None},
    }


def expected(span: ReadableSpan, verdicts: Mapping[str, Any]) -> dict[str, Any]:
    """What an exported copy of ``span`` must carry of :data:`JUDGED`: the span's own values
    overlaid with the verdicts."""
    merged = {**(span.attributes or {}), **verdicts}
    return {name: merged[name] for name in JUDGED if name in merged}


def judged(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    """The :data:`JUDGED` attributes an exported span carries."""
    attrs = attributes or {}
    return {name: attrs[name] for name in JUDGED if name in attrs}


__all__ = ["JUDGED", "SUPPORTED_VERSIONS", "ContractOracle", "expected", "judged"]
