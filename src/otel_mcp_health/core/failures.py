"""What a failed exchange tells us, from exception *types* and header codes alone (pure).

Exception messages, headers other than ``WWW-Authenticate``'s ``error``/``scope`` parameters and
every value a server sent are never read: classification keeps the privacy rule of
docs/model.md#privacy. Exceptions are matched by the qualified names of their classes (and their
bases), so the core needs neither the HTTP client nor the MCP SDK.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from otel_mcp_health.core.vocabulary import AuthError, TransportOutcome

# RFC 6750 §3: auth-param values; only ``error`` (a known code) and ``scope`` names are kept.
_AUTH_PARAM = r'(?:^|[\s,]){name}\s*=\s*(?:"([^"]*)"|([^\s,"]+))'
_AUTH_ERROR_RE = re.compile(_AUTH_PARAM.format(name="error"), re.IGNORECASE)
_AUTH_SCOPE_RE = re.compile(_AUTH_PARAM.format(name="scope"), re.IGNORECASE)
_SCOPE_TOKEN_RE = re.compile(r"^[\x21\x23-\x5B\x5D-\x7E]{1,64}$")  # RFC 6749 scope-token
MAX_SCOPES: Final = 16
_KNOWN_AUTH_ERRORS = frozenset((AuthError.INVALID_TOKEN.value, AuthError.INSUFFICIENT_SCOPE.value))


def parse_www_authenticate(header: str | None) -> tuple[str | None, tuple[str, ...]]:
    """Keep only the RFC 6750 ``error`` code (when it is one we know) and the ``scope`` names.

    The raw challenge, ``error_description``, ``error_uri`` and ``resource_metadata`` are dropped.
    """
    if not header:
        return None, ()
    error = None
    if (match := _AUTH_ERROR_RE.search(header)) is not None:
        code = (match.group(1) or match.group(2) or "").strip().lower()
        error = code if code in _KNOWN_AUTH_ERRORS else None
    scopes: tuple[str, ...] = ()
    if (match := _AUTH_SCOPE_RE.search(header)) is not None:
        names = (match.group(1) or match.group(2) or "").split()
        scopes = tuple(n for n in names if _SCOPE_TOKEN_RE.match(n))[:MAX_SCOPES]
    return error, scopes


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, the leaves of exception groups and the ``__cause__``/``__context__`` chain, once."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        if isinstance(item, BaseExceptionGroup):
            stack.extend(item.exceptions)
        stack.extend(linked for linked in (item.__cause__, item.__context__) if linked is not None)


def leaf(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _type_names(exc: BaseException) -> frozenset[str]:
    """``package.Class`` of the exception's class and its bases (``httpx2._exceptions.X`` is
    ``httpx2.X``)."""
    return frozenset(
        f"{cls.__module__.split('.')[0]}.{cls.__qualname__}" for cls in type(exc).__mro__
    )


@dataclass(frozen=True, slots=True)
class TransportFailure:
    """What an exception chain says about the exchange: outcome, whether the request was
    written (``None`` = may have been), and whether an OAuth flow failed."""

    outcome: str | None
    written: bool | None
    oauth: bool


#: ``(class name, outcome)``, in precedence order: a later match overrides the outcome unless
#: marked as a fallback (``TransportError`` only when nothing more specific was found).
#: mcp 2.x sends HTTP with ``httpx2``, mcp 1.x with ``httpx``: the same classes under two names.
_HTTP_CLIENTS = ("httpx2", "httpx")
_NEVER_SENT = frozenset(
    f"{client}.{name}" for client in _HTTP_CLIENTS for name in ("ConnectError", "ConnectTimeout")
)
_OUTCOMES: Final = (
    ("socket.gaierror", TransportOutcome.DNS_FAILURE),
    ("builtins.ConnectionRefusedError", TransportOutcome.CONNECTION_REFUSED),
    ("builtins.ConnectionResetError", TransportOutcome.CONNECTION_RESET),
    ("ssl.SSLError", TransportOutcome.TLS_FAILURE),
)
_OAUTH = "mcp.OAuthFlowError"
_TRANSPORT_ERRORS = frozenset(f"{client}.TransportError" for client in _HTTP_CLIENTS)


def classify_transport_failure(exc: BaseException) -> TransportFailure:
    """Walk the chain: ``httpx2.ConnectError <- httpcore2.ConnectError <- socket.gaierror`` is a
    DNS failure on a request never written."""
    outcome: str | None = None
    written: bool | None = None
    oauth = False
    for item in exception_chain(exc):
        names = _type_names(item)
        if _OAUTH in names:
            oauth = True
        elif names & _NEVER_SENT:
            written = False
            outcome = outcome or TransportOutcome.CONNECTION_LOST.value
        elif (found := next((o for n, o in _OUTCOMES if n in names), None)) is not None:
            outcome = found.value
        elif names & _TRANSPORT_ERRORS and outcome is None:
            outcome = TransportOutcome.CONNECTION_LOST.value
    return TransportFailure(outcome, written, oauth)


def is_cancellation(exc: BaseException) -> bool:
    """A cancellation of the awaiting task (asyncio, or trio under anyio), never a failure."""
    names = _type_names(exc)
    return "asyncio.CancelledError" in names or "trio.Cancelled" in names


__all__ = [
    "MAX_SCOPES",
    "TransportFailure",
    "classify_transport_failure",
    "exception_chain",
    "is_cancellation",
    "leaf",
    "parse_www_authenticate",
]
