"""What names a server: one identity with its parts (docs/model.md#scope).

A client session talks to one server, and every view of that server reads it from one
:class:`ServerIdentity`:

* its **target key** (``mcp_health.server.target_key``): the instrumentation's keyed hash of the
  transport target (the URL with its path and query, the stdio command line, environment and
  working directory, or the in-process server object). It never leaves the process readable, and
  it is what tells apart two gateway paths on one host and port;
* its **exported label** (:class:`ServerLabel`): ``server.address``, ``server.port`` and the
  handshake's server name, all that names a server outside the process (metric labels), and what
  a server entry of the pin file matches;
* its **catalog key** (:class:`CatalogKey`): target key, name and version as a handshake or
  install span names them, which the sessions of one server share a catalog by;
* its **incident scope** (:class:`IncidentScope`): what incidents and retry budgets are keyed by,
  the target key when known, else the label.

Values only, no I/O: the instrumentation and the processor, which never import each other, both
build it (the span encoding is in ``_codec``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


@dataclass(frozen=True, slots=True)
class ServerLabel:
    """A server's exported label; ``None`` = not known."""

    name: str | None = None
    address: str | None = None
    port: int | None = None

    @property
    def known(self) -> bool:
        """Whether any part is known (an unknown server is labelled ``unknown``)."""
        return self.name is not None or self.address is not None or self.port is not None


@dataclass(frozen=True, slots=True, eq=False)
class CatalogKey:
    """The server whose catalog a session shares, as one span names it.

    A part the span did not name equals an empty one: two spans naming the same target key, one
    with an empty version and one with none, name one server. Each part is kept as it was named,
    so encoding it back writes exactly the attributes that were read.
    """

    target_key: str | None
    name: str | None
    version: str | None
    #: The parts as compared and hashed (an absent part is empty), and their hash: computed once,
    #: as a key is built once and looked up on every span of its sessions.
    _parts: tuple[str, str, str] = field(init=False, repr=False)
    _hash: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        parts = (self.target_key or "", self.name or "", self.version or "")
        object.__setattr__(self, "_parts", parts)
        object.__setattr__(self, "_hash", hash(parts))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CatalogKey):
            return NotImplemented
        return self._parts == other._parts

    def __hash__(self) -> int:
        return self._hash

    def size(self) -> int:
        """The characters its parts hold (what a registry entry of it weighs)."""
        return sum(map(len, self._parts))


class ScopeKind(Enum):
    """What an incident scope was read from."""

    #: The transport target's keyed hash: the server itself.
    TARGET = "target"
    #: No target key: the exported label stands in for the server.
    LABEL = "label"


@dataclass(frozen=True, slots=True)
class IncidentScope:
    """What a server's incidents and retry budgets are keyed by.

    The target key when any span of the session named one (it then stays, whatever label
    follows), so two gateway paths on one host and port never share an incident. Without it, the
    label: the endpoint ``address:port`` (``address`` alone without a port), else the server
    name. Two labels that read the same that way are one scope.
    """

    kind: ScopeKind
    value: str


@dataclass(frozen=True, slots=True)
class ServerIdentity:
    """A server as this process tells it apart: its target key, exported label and catalog key
    (``None`` where not known)."""

    target_key: str | None = None
    label: ServerLabel = ServerLabel()
    catalog: CatalogKey | None = None
    #: Its :class:`IncidentScope` (``None`` when neither target key nor label is known) and the
    #: hash of its three parts: computed once, as an identity is built once and read on every
    #: span of its session.
    scope: IncidentScope | None = field(init=False, repr=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scope", _scope(self.target_key, self.label))
        object.__setattr__(self, "_hash", hash((self.target_key, self.label, self.catalog)))

    def __hash__(self) -> int:
        return self._hash


def _scope(target_key: str | None, label: ServerLabel) -> IncidentScope | None:
    """The incident scope of a server with this target key and label."""
    if target_key is not None:
        return IncidentScope(ScopeKind.TARGET, target_key)
    if label.address is not None:
        endpoint = label.address if label.port is None else f"{label.address}:{label.port}"
        return IncidentScope(ScopeKind.LABEL, endpoint)
    if label.name is not None:
        return IncidentScope(ScopeKind.LABEL, label.name)
    return None
