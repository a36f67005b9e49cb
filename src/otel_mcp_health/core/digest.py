"""Canonical catalog digest, projection ``v1`` (docs/model.md, the catalog contract).

The digest answers one question: *is the tool catalog the agent sees the same one the server
listed?* It must therefore change whenever anything the model reads changes (a new required
argument, a reworded description, a new output schema) and must not change for things it does not
read (``_meta``, ``icons``, the order the server listed the tools in, the key order inside a
schema). A names-only inventory would miss the first kind of change; a hash of whatever bytes the
server sent would trip on the second.

Recipe (exact, so that any two implementations agree):

1. project each tool to the members :data:`PROJECTED_MEMBERS` it has (a missing member is left
   out, never written as ``null``; everything else is dropped);
2. sort the projected tools by ``name`` (Python ``str`` order, i.e. code points; ties, which only
   duplicate names produce, are broken by the tools' canonical bytes, so the result never depends
   on input order);
3. write the array in RFC 8785 (JCS) canonical form (the bytes of the ``rfc8785`` package, obtained
   faster where the input allows it: :mod:`otel_mcp_health.core.jcs`), hash it with SHA-256 and
   write ``sha256:<lowercase hex>``.

The projection version (:data:`DIGEST_PROJECTION`) is recorded beside the digest, not hashed.

A **per-tool digest** (:meth:`CatalogDigester.tool_digests`) is ``sha256:<hex>`` of one projected
tool's RFC 8785 bytes: the very bytes step 3 joins into the array, so a catalog digest and the
per-tool digests of its tools come from one canonicalization. An install is compared with a
discovery tool by tool on these (docs/model.md#catalog).

Anything JCS cannot represent raises :class:`DigestError` with reason
:data:`REASON_UNREPRESENTABLE` and a short class name as detail (never the offending value).

Caching (what the cache keys on): :class:`CatalogDigester` remembers the canonical bytes of
each tool it has seen, keyed by the tool's type proof (:func:`otel_mcp_health.core.jcs.type_proof`,
a C-speed serialization that is *content-complete and type-exact*: every nested value is written
with its exact type, so ``1``, ``1.0``, ``True`` and ``"1"`` all differ, and so do ``-0.0`` and
``0.0``; subclasses and foreign objects have no proof, and such tools are canonicalized every
time, never cached). Equal proofs decode to one content, so two tools with the same key have the
same canonical bytes, and mutating a tool in place, however deeply, changes its key. Keys on
identity (``id(tool)``) or on a shallow fingerprint would return a stale digest after an in-place
mutation, and ``==`` is not exact (``True == 1 == 1.0``, and a subclass may define it): neither
is used. The price is one proof per tool on every digest, the bulk of a warm digest; it is
measured by ``benchmarks/bench_digest.py`` together with the cold and warm costs. The same bytes
serve :func:`otel_mcp_health.core.jcs.canonicalize` as the proof its fast path requires.

Bounded in bytes, not only in tools: a proof and a canonical form are each about as large as the
tool (a tool may be megabytes), so the cache holds at most ``max_bytes`` of them (least recently
used dropped first; a tool larger than that alone is never cached), and the remembered catalogs'
keys at most ``max_bytes`` more (shared with the cache while both hold a tool).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

from otel_mcp_health.core import jcs
from otel_mcp_health.core.vocabulary import DIGEST_PROJECTION

PROJECTED_MEMBERS: Final = (
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "execution",
)
#: A value in the catalog has no RFC 8785 form (NaN, ±inf, an unsafe integer, a lone surrogate,
#: a non-string key, a non-JSON type, nesting deeper than ``jcs.MAX_DEPTH``).
REASON_UNREPRESENTABLE: Final = "digest_unrepresentable"
#: An element of the tool list is not a JSON object (``Mapping``).
REASON_TOOL_NOT_AN_OBJECT: Final = "tool_not_an_object"
#: A tool has no ``name`` member, or its ``name`` is not a string.
REASON_TOOL_WITHOUT_NAME: Final = "tool_without_name"
#: The tool list itself cannot be iterated (or its iteration fails).
REASON_TOOLS_NOT_A_LIST: Final = "tools_not_a_list"

#: Default number of tools a :class:`CatalogDigester` remembers.
DEFAULT_MAX_TOOLS: Final = 4096
#: Default byte budget of a :class:`CatalogDigester`'s tool cache (keys and canonical bytes), and
#: of the keys of the catalogs it remembers.
DEFAULT_MAX_BYTES: Final = 32 * 1024 * 1024
#: How many whole catalogs (lists of tool keys) a digester remembers the digest of.
RECENT_CATALOGS: Final = 4

_Entry = tuple[str, bytes]  # (name, canonical bytes of the projected tool); sorts as §3 requires


class DigestError(ValueError):
    """A catalog that has no digest; ``reason`` is a short code, ``detail`` a short class name."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def project_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The projection ``v1`` of one tool: the members of :data:`PROJECTED_MEMBERS` it has."""
    return {key: tool[key] for key in PROJECTED_MEMBERS if key in tool}


def canonicalize(value: Any, proof: bytes | None = None) -> bytes:
    """RFC 8785 bytes of ``value`` (byte-equal to ``rfc8785.dumps``), or :class:`DigestError`.

    ``proof``: :func:`otel_mcp_health.core.jcs.type_proof` of ``value`` or of its container."""
    try:
        return jcs.canonicalize(value, proof)
    except jcs.JcsError as exc:
        raise DigestError(REASON_UNREPRESENTABLE, exc.kind) from None


def _entry(tool: object, key: bytes | None = None) -> _Entry:
    """Project, check and canonicalize one tool (``key``: its cache key, if it has one)."""
    if type(tool) is not dict and not isinstance(tool, Mapping):
        raise DigestError(REASON_TOOL_NOT_AN_OBJECT, type(tool).__name__)
    try:
        projected = project_tool(tool)
    except Exception as exc:  # noqa: BLE001 - a Mapping whose __contains__/__getitem__ misbehaves
        raise DigestError(REASON_TOOL_NOT_AN_OBJECT, type(exc).__name__) from None
    name = projected.get("name")
    if not isinstance(name, str):
        raise DigestError(REASON_TOOL_WITHOUT_NAME, type(name).__name__)
    try:
        return str.__str__(name), jcs.canonicalize(projected, key)
    except jcs.JcsError as exc:
        raise DigestError(REASON_UNREPRESENTABLE, exc.kind) from None


def _cache_key(tool: object) -> bytes | None:
    """The tool's cache key, or ``None`` when it cannot have one (then it is not cached)."""
    return jcs.type_proof(tool) if type(tool) is dict else None


def _assemble(entries: list[_Entry]) -> bytes:
    return b"[" + b",".join([canonical for _, canonical in entries]) + b"]"


class CatalogDigester:
    """Computes catalog digests, remembering each tool's canonical bytes (thread-safe, bounded).

    A cold digest canonicalizes every tool. A warm one (the same tools again, as after every
    ``tools/list`` that returned nothing new) only computes each tool's cache key (its type proof,
    see the module docstring): if the list of keys equals that of a recently digested catalog (a
    ``memcmp`` per tool, no hashing), its digest is returned; otherwise each tool is looked up by
    its key and only the tools not found are canonicalized. Equal keys mean equal content, so
    neither level can return a stale digest.

    At most ``max_tools`` tools and ``max_bytes`` of their keys and canonical bytes (least
    recently used dropped first; a tool whose key and bytes alone exceed ``max_bytes`` is never
    cached), and :data:`RECENT_CATALOGS` catalogs whose keys total at most ``max_bytes`` are
    remembered: :attr:`held_bytes` never exceeds ``2 * max_bytes``. ``max_tools=0`` disables
    caching (no keys are computed then).
    """

    def __init__(
        self, max_tools: int = DEFAULT_MAX_TOOLS, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        if max_tools < 0:
            raise ValueError("max_tools must be >= 0")
        if max_bytes < 0:
            raise ValueError("max_bytes must be >= 0")
        self._max_tools = max_tools
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._tools: OrderedDict[bytes, _Entry] = OrderedDict()
        self._tool_bytes = 0
        self._recent: list[_Recent] = []
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def held_bytes(self) -> int:
        """Bytes of keys and canonical forms the cache holds, plus the remembered catalogs' keys
        and per-tool digests (a key both hold is counted twice: an upper bound)."""
        with self._lock:
            return self._tool_bytes + sum(recent.size for recent in self._recent)

    def clear(self) -> None:
        """Forget every remembered tool and catalog."""
        with self._lock:
            self._tools.clear()
            self._tool_bytes = 0
            self._recent.clear()

    def _keys(self, items: list[Any]) -> list[bytes | None]:
        keys = jcs.type_proofs(items)  # the common case: every tool is a plain dict of JSON values
        if keys is None:
            return [_cache_key(tool) for tool in items]
        return cast("list[bytes | None]", keys)

    def _entries(self, items: list[Any], keys: list[bytes | None]) -> list[_Entry]:
        """Each tool's entry, from the cache where possible (input order)."""
        cache = self._tools
        with self._lock:
            found = [cache.get(key) for key in keys]  # type: ignore[arg-type]
            for key, hit in zip(keys, found, strict=True):
                if hit is not None:
                    cache.move_to_end(key)  # type: ignore[arg-type]
        entries: list[_Entry] = []
        new: list[tuple[bytes, _Entry]] = []
        for tool, key, hit in zip(items, keys, found, strict=True):
            if hit is not None:
                entries.append(hit)
                continue
            entry = _entry(tool, key)
            if key is not None:
                new.append((key, entry))
            entries.append(entry)
        with self._lock:
            self.hits += len(items) - len(new)
            self.misses += len(new)
            for key, entry in new:
                self._remember(key, entry)
        return entries

    def _remember(self, key: bytes, entry: _Entry) -> None:
        """Cache one tool within both bounds (under the lock)."""
        size = len(key) + len(entry[1])
        if size > self._max_bytes or key in self._tools:
            return
        cache = self._tools
        # An exact-size copy: a C encoder's output may keep its whole growth buffer (measured:
        # 2 MiB of JSON held 32 MiB), which ``len`` does not show and the budget must not miss.
        cache[key] = (entry[0], bytes(memoryview(entry[1])))
        self._tool_bytes += size
        while len(cache) > self._max_tools or self._tool_bytes > self._max_bytes:
            old_key, (_, old_bytes) = cache.popitem(last=False)
            self._tool_bytes -= len(old_key) + len(old_bytes)

    def _recall(self, keys: list[bytes | None]) -> _Recent | None:
        """The remembered catalog of exactly these keys, marked as used (under the lock)."""
        for index, recent in enumerate(self._recent):
            if recent.keys == keys:
                self._recent.insert(0, self._recent.pop(index))
                self.hits += len(keys)
                return recent
        return None

    def _keep(self, recent: _Recent) -> None:
        """Remember a digested catalog within both bounds (under the lock)."""
        if recent.size > self._max_bytes:
            return
        self._recent.insert(0, recent)
        del self._recent[RECENT_CATALOGS:]
        while sum(r.size for r in self._recent) > self._max_bytes:
            self._recent.pop()

    def canonical_bytes(self, tools: Iterable[Mapping[str, Any]]) -> bytes:
        """The RFC 8785 bytes of the projected, sorted catalog (what :meth:`digest` hashes)."""
        items = _as_list(tools)
        if not self._max_tools:
            return _assemble(sorted(_entry(tool) for tool in items))
        return _assemble(sorted(self._entries(items, self._keys(items))))

    def digest(self, tools: Iterable[Mapping[str, Any]]) -> str:
        """``sha256:<hex>`` of the catalog (docs/model.md), or :class:`DigestError`."""
        items = _as_list(tools)
        if not self._max_tools:
            return _hash(sorted(_entry(tool) for tool in items))
        keys = self._keys(items)
        with self._lock:
            recent = self._recall(keys)
        if recent is not None:
            return recent.digest
        entries = sorted(self._entries(items, keys))
        result = _hash(entries)
        if None not in keys:
            with self._lock:
                self._keep(_Recent(keys, result))  # type: ignore[arg-type]
        return result

    def tool_digests(self, tools: Iterable[Mapping[str, Any]]) -> dict[str, str]:
        """Each tool's name -> ``sha256:<hex>`` of its canonical bytes (one of all its different
        definitions for a repeated name), or :class:`DigestError` (as :meth:`digest`)."""
        return self.digests(tools)[1]

    def digests(self, tools: Iterable[Mapping[str, Any]]) -> tuple[str, dict[str, str]]:
        """The catalog digest and the per-tool digests (:meth:`tool_digests`) in one pass: one
        cache key per tool, one canonicalization per tool not cached."""
        items = _as_list(tools)
        if not self._max_tools:
            entries = sorted(_entry(tool) for tool in items)
            return _hash(entries), _tool_digests(entries)
        keys = self._keys(items)
        with self._lock:
            recent = self._recall(keys)
            if recent is not None and recent.tools is not None:
                return recent.digest, dict(recent.tools)
        entries = sorted(self._entries(items, keys))
        found = _tool_digests(entries)
        digest = recent.digest if recent is not None else _hash(entries)
        if None not in keys:
            with self._lock:
                if recent is None:
                    recent = _Recent(keys, digest)  # type: ignore[arg-type]
                    recent.tools = found
                    self._keep(recent)
                elif recent.size + _map_size(found) <= self._max_bytes:
                    recent.tools = found
        return digest, dict(found)


class _Recent:
    """A digested catalog: its tools' keys, its digest and, once asked for, its per-tool
    digests; ``size``: the bytes it holds beyond the cache."""

    __slots__ = ("digest", "keys", "tools")

    def __init__(self, keys: list[bytes], digest: str) -> None:
        self.keys = keys
        self.digest = digest
        self.tools: dict[str, str] | None = None

    @property
    def size(self) -> int:
        tools = _map_size(self.tools) if self.tools is not None else 0
        return sum(len(key) for key in self.keys) + tools


def _map_size(tools: Mapping[str, str]) -> int:
    return sum(len(name) + len(digest) for name, digest in tools.items())


def _tool_digests(entries: list[_Entry]) -> dict[str, str]:
    """One digest per name; a name with different definitions: one of them all (as an array)."""
    grouped: dict[str, list[bytes]] = {}
    for name, canonical in entries:
        if canonical not in (found := grouped.setdefault(name, [])):
            found.append(canonical)
    one = [
        (n, f[0] if len(f) == 1 else _assemble([("", b) for b in f])) for n, f in grouped.items()
    ]
    return {name: "sha256:" + hashlib.sha256(data).hexdigest() for name, data in one}


def _as_list(tools: Iterable[Mapping[str, Any]]) -> list[Any]:
    if type(tools) is list:
        return tools
    try:
        return list(tools)
    except Exception as exc:  # noqa: BLE001 - not iterable, or an iterator that fails
        raise DigestError(REASON_TOOLS_NOT_A_LIST, type(exc).__name__) from None


def _hash(entries: list[_Entry]) -> str:
    return "sha256:" + hashlib.sha256(_assemble(entries)).hexdigest()


#: The digester behind :func:`digest_tools`: one process-wide bounded cache, so that every
#: session's repeated ``tools/list`` of the same server is cheap. Use a private
#: :class:`CatalogDigester` to isolate a cache (or ``max_tools=0`` to disable caching).
DEFAULT_DIGESTER: Final = CatalogDigester()


def digest_tools(tools: Iterable[Mapping[str, Any]]) -> str:
    """``sha256:<hex>`` of a tool list under projection ``v1``, via :data:`DEFAULT_DIGESTER`."""
    return DEFAULT_DIGESTER.digest(tools)


def tool_digests(tools: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each tool's per-tool digest under projection ``v1``, via :data:`DEFAULT_DIGESTER`."""
    return DEFAULT_DIGESTER.tool_digests(tools)


def digests(tools: Iterable[Mapping[str, Any]]) -> tuple[str, dict[str, str]]:
    """The catalog digest and the per-tool digests in one pass, via :data:`DEFAULT_DIGESTER`."""
    return DEFAULT_DIGESTER.digests(tools)


def catalog_bytes(tools: Iterable[Mapping[str, Any]]) -> bytes:
    """The canonical bytes :func:`digest_tools` hashes (for debugging and golden vectors)."""
    return DEFAULT_DIGESTER.canonical_bytes(tools)


__all__ = [
    "DEFAULT_DIGESTER",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_TOOLS",
    "DIGEST_PROJECTION",
    "PROJECTED_MEMBERS",
    "REASON_TOOLS_NOT_A_LIST",
    "REASON_TOOL_NOT_AN_OBJECT",
    "REASON_TOOL_WITHOUT_NAME",
    "REASON_UNREPRESENTABLE",
    "RECENT_CATALOGS",
    "CatalogDigester",
    "DigestError",
    "canonicalize",
    "catalog_bytes",
    "digest_tools",
    "digests",
    "project_tool",
    "tool_digests",
]
