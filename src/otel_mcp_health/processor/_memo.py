"""Memoized call judgements of the engine (private; docs/performance.md).

Most ``tools/call`` spans of a fleet repeat a few shapes: the same tool, the same outcome, under
the same session facts. Decoding a span's attributes into evidence and running the contract on it
cost far more than recognising a shape seen before, so the engine keeps bounded memos:

* :meth:`CallMemo.decoded`: the attribute values a call's evidence is decoded from
  (:data:`CALL_KEYS`, each with its type, absent keys distinct from any value) → the decoded
  evidence. Equal keys decode to equal evidence because decoding reads nothing else (a test
  checks that every attribute the decoders read is listed);
* :attr:`Decoded.judged`: per decoded shape, the judgement under one context (the carried
  authorization failure, the live state and the tokens of the session's handshake facts and
  catalog verdict, :meth:`CallMemo.token`);
* :meth:`CallMemo.server`: the server identity a span's metrics are labelled with, keyed on the
  values and types of :data:`SERVER_KEYS` and the session's fallback (every span asks for it),
  and per session the last answer with its key (:meth:`CallMemo.session_server`: a session's
  spans repeat their server's attributes, so its next span compares them instead of hashing
  the fallback identity);
* per session (:class:`SessionMemo`, held by the session but kept only here): its handshake facts,
  derived once per handshake (:meth:`CallMemo.handshake_facts`), and its catalog verdict, derived
  once per version of its evidence and side of the refresh deadline
  (:meth:`CallMemo.catalog_result`), each with its token, and per offered install check a call
  carries (docs/model.md#agents) the catalog verdict judged on it, derived once per catalog
  verdict of the session (:meth:`CallMemo.offered_result`), so a ``tools/call`` judged on what
  its agent was offered costs what any other does.

A memo is cleared when full; a value that cannot be hashed (a list in a hand-built span) is
simply not memoized.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.calls import CallResult
from otel_mcp_health.core.catalog import CatalogResult, classify_catalog
from otel_mcp_health.core.contract import HandshakeFacts, handshake_facts
from otel_mcp_health.core.evidence import (
    AuthorizationEvidence,
    CallEvidence,
    HandshakeEvidence,
    InstallCheck,
    ToolCallCheck,
)
from otel_mcp_health.core.server import ServerIdentity
from otel_mcp_health.core.session import SessionResult
from otel_mcp_health.core.vocabulary import CatalogVerdict, Layer, LayerStatus, LiveState
from otel_mcp_health.processor import _freshness, _verdicts
from otel_mcp_health.processor._freshness import Freshness

if TYPE_CHECKING:  # the session holds its memo: a runtime import would be circular
    from otel_mcp_health.processor._sessions import Session

#: Every attribute :func:`_codec.decode_call` and :func:`_codec.decode_tool_call_check` read, and
#: the outcome and server attributes the call's metrics are labelled with.
CALL_KEYS: Final = (
    A.GEN_AI_TOOL_NAME,
    A.TOOL_READ_ONLY,
    A.TRANSPORT_OUTCOME,
    A.HTTP_RESPONSE_STATUS_CODE,
    A.TRANSPORT_REQUEST_WRITTEN,
    A.NETWORK_TRANSPORT,
    A.AUTH_ERROR,
    A.AUTH_REQUIRED_SCOPES,
    A.RPC_RESPONSE_STATUS_CODE,
    A.PROTOCOL_RESULT_VALID,
    A.CALL_IS_ERROR,
    A.CALL_TIMED_OUT,
    A.CALL_OUTPUT_SCHEMA_VALID,
    A.EFFECT_OBSERVED,
    A.EFFECT_METHOD,
    A.OUTCOME_METHOD,
    A.OUTCOME_RESULT,
    A.OUTCOME_CONFIDENCE,
    A.CALL_CONTRACT,
    A.CALL_MISSING_ARGUMENTS,
    A.EVIDENCE_MISSING,
    A.CALL_APPROVAL,
    A.CALL_APPROVAL_REASON,
    A.OFFERED_TOOL_COUNT,
    A.OFFERED_DISCOVERED_TOOL_COUNT,
    A.OFFERED_DISCOVERY_DIGEST,
    A.OFFERED_CHANGED,
    A.OFFERED_UNLISTED,
    A.OFFERED_CHANGED_MEMBERS,
    A.OFFERED_EARLIER_CATALOG,
    A.SERVER_ADDRESS,
    A.SERVER_PORT,
)
_ABSENT: Final = object()
_DEFAULTS: Final = (_ABSENT,) * len(CALL_KEYS)
#: What :func:`_codec.decode_server` derives a server identity from (with what was known).
SERVER_KEYS: Final = (A.SERVER_ADDRESS, A.SERVER_PORT, A.SERVER_NAME, A.SERVER_TARGET_KEY)
_SERVER_DEFAULTS: Final = (_ABSENT,) * len(SERVER_KEYS)
#: Server identities kept at once (cleared when full).
MAX_SERVER_IDENTITIES: Final = 1024
#: Decoded shapes and judgements kept at once (all forgotten when either is full), and counter
#: cells kept per judgement (one per server label).
MAX_SHAPES: Final = 1024
MAX_JUDGEMENTS: Final = 4096
MAX_CELLS: Final = 8
#: Interned session facts kept at once (tokens are never reused, so clearing is always safe).
MAX_TOKENS: Final = 4096
#: Offered install checks whose catalog verdict one session keeps at once (cleared when full).
MAX_OFFERED: Final = 16


@dataclass(slots=True, frozen=True)
class Offered:
    """The session's catalog verdict judged on an offered install check: the session's own
    verdict it was derived with, the verdict, its token, and whether a reported install of the
    session reads otherwise (the model request overruled it)."""

    base: CatalogResult
    result: CatalogResult
    token: int
    overruled: bool


@dataclass(slots=True, eq=False)
class SessionMemo:
    """One session's memoized facts: each result with what it was derived from, and its token
    (``-1`` when the result was derived again and its token is not known yet)."""

    facts: tuple[HandshakeEvidence | None, HandshakeFacts] | None = None
    #: ``((session version, server version), handshake, freshness, verdict)``
    catalog: tuple[tuple[int, int], HandshakeEvidence | None, Freshness, CatalogResult] | None = (
        None
    )
    facts_token: int = -1
    catalog_token: int = -1
    offered: dict[InstallCheck, Offered] = field(default_factory=dict)
    #: ``(memo epoch, values, types, decoded)`` of the session's last
    #: :meth:`CallMemo.session_decoded`.
    shape: tuple[int, tuple[Any, ...], tuple[Any, ...], Decoded] | None = None
    #: ``(fallback, values, types, identity)`` of the session's last :meth:`CallMemo.server`.
    server: tuple[ServerIdentity, tuple[Any, ...], tuple[Any, ...], ServerIdentity] | None = None


@dataclass(slots=True, eq=False)
class Judged:
    """One call judgement: what the engine writes, counts and remembers for it."""

    call: CallEvidence
    result: CallResult
    catalog_verdict: CatalogVerdict
    verdicts: dict[str, Any]
    #: The call's authorization layer status (a failure carries forward, a pass clears it).
    authorization: LayerStatus | None
    #: The counter cells of ``mcp_health.calls`` and ``mcp_health.outcomes``, per server label.
    cells: dict[Any, Any] = field(default_factory=dict)
    #: The server label counted last and its cells (most calls of a judgement are of one server:
    #: an identity check instead of hashing the label).
    last_label: Any = None
    last_cells: Any = None


@dataclass(slots=True, eq=False)
class Decoded:
    """A call's evidence as decoded from its attributes, and its judgements by context."""

    call: CallEvidence
    finding: ToolCallCheck | None
    receipt: str
    method: str
    #: What the call's agent was offered, compared with its server's discovery (or ``None``).
    offered: InstallCheck | None
    judged: dict[tuple[Any, ...], Judged] = field(default_factory=dict)


def decode(attrs: _codec.Attributes) -> Decoded:
    """A call span's evidence, unmemoized (the full derivation uses this directly)."""
    receipt, method = attrs.get(A.OUTCOME_RESULT), attrs.get(A.OUTCOME_METHOD)
    return Decoded(
        call=_codec.decode_call(attrs),
        finding=_codec.decode_tool_call_check(attrs),
        receipt=receipt if isinstance(receipt, str) else "none",
        method=str(method or "none"),
        offered=_codec.decode_offered(attrs),
    )


class CallMemo:
    """The engine's memos (used under the engine's lock)."""

    def __init__(self) -> None:
        self._shapes: dict[tuple[Any, ...], Decoded] = {}
        self._judgements = 0
        #: Bumped whenever the shapes are forgotten (:meth:`session_decoded`).
        self._epoch = 0
        self._tokens: dict[Any, int] = {}
        self._next_token = itertools.count()
        self._servers: dict[tuple[Any, ...], ServerIdentity] = {}

    def remember(self, decoded: Decoded, context: tuple[Any, ...], judged: Judged) -> Judged:
        """Keep ``judged`` for ``decoded`` in ``context`` (bounded: every shape is forgotten when
        the judgements are full)."""
        if self._judgements >= MAX_JUDGEMENTS:
            self._forget_shapes()
        decoded.judged[context] = judged
        self._judgements += 1
        return judged

    def decoded(self, attrs: _codec.Attributes) -> Decoded:
        """The decoded evidence of a call span, memoized on its attribute values and types."""
        values = tuple(map(attrs.get, CALL_KEYS, _DEFAULTS))
        return self._interned(attrs, values, tuple(map(type, values)))[0]

    def session_decoded(self, attrs: _codec.Attributes, session: Session) -> Decoded:
        """:meth:`decoded` for a call span of ``session``. The session's last answer is reused
        while the memo has not been cleared since and the :data:`CALL_KEYS` values and types
        compare equal (:meth:`decoded`'s own key, compared without hashing it): a session's calls
        mostly repeat one shape."""
        values = tuple(map(attrs.get, CALL_KEYS, _DEFAULTS))
        types = tuple(map(type, values))
        memo = session.memo
        last = memo.shape
        if last is not None and last[0] == self._epoch and last[1] == values and last[2] == types:
            return last[3]
        found, interned = self._interned(attrs, values, types)
        if interned:
            memo.shape = (self._epoch, values, types, found)
        return found

    def _interned(
        self, attrs: _codec.Attributes, values: tuple[Any, ...], types: tuple[Any, ...]
    ) -> tuple[Decoded, bool]:
        """The decoded evidence of ``values`` (``attrs``' :data:`CALL_KEYS`), and whether it is
        the memo's (``False``: an unhashable value, decoded afresh)."""
        key = (values, types)
        try:
            found = self._shapes.get(key)
        except TypeError:  # an unhashable value: decode every time
            return decode(attrs), False
        if found is None:
            if len(self._shapes) >= MAX_SHAPES:
                self._forget_shapes()
            found = self._shapes[key] = decode(attrs)
        return found, True

    def _forget_shapes(self) -> None:
        """Forget every shape and its judgements (a new epoch: sessions drop their last one)."""
        self._shapes.clear()
        self._judgements = 0
        self._epoch += 1

    def server(self, attrs: _codec.Attributes, known: ServerIdentity) -> ServerIdentity:
        """:func:`_codec.decode_server`, memoized on the values and types it is derived from."""
        values = tuple(map(attrs.get, SERVER_KEYS, _SERVER_DEFAULTS))
        key = (known, values, tuple(map(type, values)))
        try:
            found = self._servers.get(key, _ABSENT)
        except TypeError:  # an unhashable value
            return _codec.decode_server(attrs, known)
        if found is _ABSENT:
            if len(self._servers) >= MAX_SERVER_IDENTITIES:
                self._servers.clear()
            found = self._servers[key] = _codec.decode_server(attrs, known)
        return found  # type: ignore[return-value]

    def session_server(self, attrs: _codec.Attributes, session: Session) -> ServerIdentity:
        """:meth:`server` for a span of ``session`` (its fallback: the session's identity). The
        session's last answer is reused when the fallback is the same object and the
        :data:`SERVER_KEYS` values and types compare equal: :meth:`server`'s own key, compared
        without hashing the identity."""
        known = session.server
        values = tuple(map(attrs.get, SERVER_KEYS, _SERVER_DEFAULTS))
        types = tuple(map(type, values))
        memo = session.memo
        last = memo.server
        if last is not None and last[0] is known and last[1] == values and last[2] == types:
            return last[3]
        found = self.server(attrs, known)
        try:
            hash(values)
        except TypeError:  # not memoized by :meth:`server` either
            return found
        memo.server = (known, values, types, found)
        return found

    def token(self, value: Any) -> int:
        """A small integer standing for ``value``: equal values get the same token while it is
        interned, and a token never stands for two different values."""
        found = self._tokens.get(value)
        if found is None:
            if len(self._tokens) >= MAX_TOKENS:
                self._tokens.clear()
            found = self._tokens[value] = next(self._next_token)
        return found

    def context(
        self,
        session: Session,
        facts: HandshakeFacts,
        catalog: CatalogResult,
        *,
        carried: AuthorizationEvidence | None,
        live: LiveState | None,
        offered: Offered | None = None,
    ) -> tuple[Any, ...]:
        """The key of a call's judgement context (see the module docstring); ``offered``: the
        call is judged on its agent's offered install (:meth:`offered_result`)."""
        return (
            carried,
            live,
            self.facts_token(session, facts),
            self.catalog_token(session, catalog) if offered is None else offered.token,
        )

    def facts_token(self, session: Session, facts: HandshakeFacts) -> int:
        """The token of what the contract reads of the session's handshake facts (``facts`` is
        :meth:`handshake_facts`, which resets the token whenever it derives them again)."""
        memo = session.memo
        if memo.facts_token < 0:
            failed = facts.failed
            value = (
                facts.compatible,
                facts.incompatible_reason,
                None
                if failed is None
                else (failed.first_failed, failed.reason, failed.next_action),
            )
            memo.facts_token = self.token(("facts", value))
        return memo.facts_token

    def catalog_token(self, session: Session, catalog: CatalogResult) -> int:
        """The token of the session's catalog verdict (``catalog`` is :meth:`catalog_result`,
        which resets the token whenever it derives the verdict again)."""
        memo = session.memo
        if memo.catalog_token < 0:
            memo.catalog_token = self.token(("catalog", catalog))
        return memo.catalog_token

    def handshake_facts(self, session: Session) -> HandshakeFacts:
        """What the contract needs from the session's handshake, derived once per handshake."""
        memo = session.memo
        found = memo.facts
        if found is None or found[0] is not session.handshake:
            found = (session.handshake, handshake_facts(session.handshake, uses_tools=True))
            memo.facts = found
            memo.facts_token = -1
        return found[1]

    def catalog_result(self, session: Session, now: int | None, max_age_s: float) -> CatalogResult:
        """The session's catalog verdict at ``now``, derived once per version of its evidence
        (and, for a server that cannot signal changes, once per side of the refresh deadline)."""
        freshness = _freshness.freshness(session.dated(), now, max_age_s)
        catalog = session.server_catalog
        version = (session.version, catalog.version if catalog is not None else -1)
        memo = session.memo
        found = memo.catalog
        if (
            found is not None
            and found[0] == version
            and found[1] is session.handshake
            and found[2] == freshness
        ):
            return found[3]
        result = classify_catalog(session.catalog(now, max_age_s))
        memo.catalog = (version, session.handshake, freshness, result)
        memo.catalog_token = -1
        return result

    def offered_result(
        self,
        session: Session,
        base: CatalogResult,
        check: InstallCheck,
        now: int | None,
        max_age_s: float,
    ) -> Offered:
        """The session's catalog verdict judged on ``check`` (what the call's agent was offered:
        ``client_source = model_request``, docs/model.md#agents), derived once per ``base``
        (:meth:`catalog_result`, a new object whenever the session's evidence changed)."""
        memo = session.memo
        found = memo.offered.get(check)
        if found is not None and found.base is base:
            return found
        evidence = session.offered_catalog(now, max_age_s)
        result = classify_catalog(replace(evidence, offered=check))
        registered = (
            evidence.client_digest is not None
            or evidence.client_digest_error is not None
            or evidence.client_tools is not None
        )
        overruled = registered and (base.verdict, base.reason) != (result.verdict, result.reason)
        if len(memo.offered) >= MAX_OFFERED:
            memo.offered.clear()
        found = memo.offered[check] = Offered(
            base, result, self.token(("catalog", result)), overruled
        )
        return found


def judgement(call: CallEvidence, outcome: SessionResult) -> Judged:
    """A fresh judgement of ``call`` from the core's answer."""
    verdicts = _verdicts.call_attributes(outcome.call)
    if outcome.catalog is not None:
        verdicts.update(_verdicts.catalog_verdict_attributes(outcome.catalog))
    authorization = outcome.call.layers.get(Layer.AUTHORIZATION)
    return Judged(call, outcome.call, outcome.catalog_verdict, verdicts, authorization)
