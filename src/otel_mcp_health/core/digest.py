"""Catalog digests, projection ``v1`` (docs/model.md, the catalog contract), cached.

The digest answers one question: *is the tool catalog the agent sees the same one the server
listed?* It must therefore change whenever anything the model reads changes (a new required
argument, a reworded description, a new output schema) and must not change for things it does not
read (``_meta``, ``icons``, the order the server listed the tools in, the key order inside a
schema). A names-only inventory would miss the first kind of change; a hash of whatever bytes the
server sent would trip on the second. The bytes hashed, and the per-tool digests an install is
compared with tool by tool (docs/model.md#catalog), are defined in
:mod:`otel_mcp_health.core.canonical`. The projection version (:data:`DIGEST_PROJECTION`) is
recorded beside the digest, not hashed.

Caching (what the cache keys on): :class:`CatalogDigester` remembers the canonical bytes of
each tool it has seen, keyed by the tool's type proof (:func:`otel_mcp_health.core.jcs.type_proof`,
a C-speed serialization that is *content-complete and type-exact*: every nested value is written
with its exact type, so ``1``, ``1.0``, ``True`` and ``"1"`` all differ, and so do ``-0.0`` and
``0.0``; subclasses and foreign objects have no proof, and such tools are canonicalized every
time, never cached). Equal proofs decode to one content, so two tools with the same key have the
same canonical bytes, and mutating a tool in place, however deeply, changes its key. Keys on
identity (``id(tool)``) or on a shallow fingerprint would return a stale digest after an in-place
mutation, and ``==`` is not exact (``True == 1 == 1.0``, and a subclass may define it): neither
is used. The price is one proof per tool on every digest (its cost: docs/performance.md). The
same bytes serve :func:`otel_mcp_health.core.jcs.canonicalize` as the proof its fast path
requires.

Bounded in bytes, not only in tools: a proof and a canonical form are each about as large as the
tool (a tool may be megabytes), so the cache holds at most ``max_bytes`` of them (least recently
used dropped first; a tool larger than that alone is never cached), and the remembered catalogs'
keys at most ``max_bytes`` more (shared with the cache while both hold a tool).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

from otel_mcp_health.core import jcs
from otel_mcp_health.core.canonical import (
    PROJECTED_MEMBERS,
    DigestError,
    Entry,
    as_list,
    assemble,
    canonicalize,
    catalog_hash,
    per_name_digests,
    project_tool,
    tool_entry,
)
from otel_mcp_health.core.vocabulary import DIGEST_PROJECTION

#: Default number of tools a :class:`CatalogDigester` remembers.
DEFAULT_MAX_TOOLS: Final = 4096
#: Default byte budget of a :class:`CatalogDigester`'s tool cache (keys and canonical bytes), and
#: of the keys of the catalogs it remembers.
DEFAULT_MAX_BYTES: Final = 32 * 1024 * 1024
#: How many whole catalogs (lists of tool keys) a digester remembers the digest of.
RECENT_CATALOGS: Final = 4


def _cache_key(tool: object) -> bytes | None:
    """The tool's cache key, or ``None`` when it cannot have one (then it is not cached)."""
    return jcs.type_proof(tool) if type(tool) is dict else None


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
        self._tools: OrderedDict[bytes, Entry] = OrderedDict()
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

    def _entries(self, items: list[Any], keys: list[bytes | None]) -> list[Entry]:
        """Each tool's entry, from the cache where possible (input order)."""
        cache = self._tools
        with self._lock:
            found = [cache.get(key) for key in keys]  # type: ignore[arg-type]
            for key, hit in zip(keys, found, strict=True):
                if hit is not None:
                    cache.move_to_end(key)  # type: ignore[arg-type]
        entries: list[Entry] = []
        new: list[tuple[bytes, Entry]] = []
        for tool, key, hit in zip(items, keys, found, strict=True):
            if hit is not None:
                entries.append(hit)
                continue
            entry = tool_entry(tool, key)
            if key is not None:
                new.append((key, entry))
            entries.append(entry)
        with self._lock:
            self.hits += len(items) - len(new)
            self.misses += len(new)
            for key, entry in new:
                self._remember(key, entry)
        return entries

    def _remember(self, key: bytes, entry: Entry) -> None:
        """Cache one tool within both bounds (under the lock)."""
        size = len(key) + len(entry[1])
        if size > self._max_bytes or key in self._tools:
            return
        cache = self._tools
        # An exact-size copy: a C encoder's output may keep its whole growth buffer, many times
        # its length (docs/performance.md), which ``len`` does not show and the budget must not
        # miss.
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
        items = as_list(tools)
        if not self._max_tools:
            return assemble(sorted(tool_entry(tool) for tool in items))
        return assemble(sorted(self._entries(items, self._keys(items))))

    def digest(self, tools: Iterable[Mapping[str, Any]]) -> str:
        """``sha256:<hex>`` of the catalog (docs/model.md), or :class:`DigestError`."""
        items = as_list(tools)
        if not self._max_tools:
            return catalog_hash(sorted(tool_entry(tool) for tool in items))
        keys = self._keys(items)
        with self._lock:
            recent = self._recall(keys)
        if recent is not None:
            return recent.digest
        entries = sorted(self._entries(items, keys))
        result = catalog_hash(entries)
        if None not in keys:
            with self._lock:
                self._keep(_Recent(keys, result))  # type: ignore[arg-type]
        return result

    def tool_digests(self, tools: Iterable[Mapping[str, Any]]) -> dict[str, str]:
        """Each tool's name -> ``sha256:<hex>`` of its own canonical bytes, or
        :class:`DigestError` (as :meth:`digest`). A name listed more than once with different
        definitions gets one digest of them all, which no single definition equals
        (:func:`otel_mcp_health.core.canonical.per_name_digests`)."""
        return self.digests(tools)[1]

    def digests(self, tools: Iterable[Mapping[str, Any]]) -> tuple[str, dict[str, str]]:
        """The catalog digest and the per-tool digests (:meth:`tool_digests`) in one pass: one
        cache key per tool, one canonicalization per tool not cached."""
        items = as_list(tools)
        if not self._max_tools:
            entries = sorted(tool_entry(tool) for tool in items)
            return catalog_hash(entries), per_name_digests(entries)
        keys = self._keys(items)
        with self._lock:
            recent = self._recall(keys)
            if recent is not None and recent.tools is not None:
                return recent.digest, dict(recent.tools)
        entries = sorted(self._entries(items, keys))
        found = per_name_digests(entries)
        digest = recent.digest if recent is not None else catalog_hash(entries)
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
