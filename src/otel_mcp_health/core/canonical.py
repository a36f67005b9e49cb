"""The canonical bytes of a catalog, projection ``v1`` (docs/model.md, the catalog contract).

Recipe (exact, so that any two implementations agree):

1. project each tool to the members :data:`PROJECTED_MEMBERS` it has (a missing member is left
   out, never written as ``null``; everything else is dropped);
2. sort the projected tools by ``name`` (Python ``str`` order, i.e. code points; ties, which only
   duplicate names produce, are broken by the tools' canonical bytes, so the result never depends
   on input order);
3. write the array in RFC 8785 (JCS) canonical form (the bytes of the ``rfc8785`` package, obtained
   faster where the input allows it: :mod:`otel_mcp_health.core.jcs`), hash it with SHA-256 and
   write ``sha256:<lowercase hex>``.

A **per-tool digest** is ``sha256:<hex>`` of one projected tool's RFC 8785 bytes: the very bytes
step 3 joins into the array, so a catalog digest and the per-tool digests of its tools come from
one canonicalization (:func:`per_name_digests`).

Anything JCS cannot represent raises :class:`DigestError` with reason
:attr:`DigestReason.UNREPRESENTABLE` and a short class name as detail (never the offending value).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

from otel_mcp_health.core import jcs
from otel_mcp_health.core.reasons import DigestReason

PROJECTED_MEMBERS: Final = (
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "execution",
)

#: One tool, canonicalized: its name and the RFC 8785 bytes of its projection. Entries sort as
#: step 2 of the recipe requires (name, then canonical bytes).
Entry = tuple[str, bytes]


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
        raise DigestError(DigestReason.UNREPRESENTABLE, exc.kind) from None


def tool_entry(tool: object, key: bytes | None = None) -> Entry:
    """Project, check and canonicalize one tool (``key``: its cache key, if it has one)."""
    if type(tool) is not dict and not isinstance(tool, Mapping):
        raise DigestError(DigestReason.TOOL_NOT_AN_OBJECT, type(tool).__name__)
    try:
        projected = project_tool(tool)
    except Exception as exc:  # noqa: BLE001 - a Mapping whose __contains__/__getitem__ misbehaves
        raise DigestError(DigestReason.TOOL_NOT_AN_OBJECT, type(exc).__name__) from None
    name = projected.get("name")
    if not isinstance(name, str):
        raise DigestError(DigestReason.TOOL_WITHOUT_NAME, type(name).__name__)
    try:
        return str.__str__(name), jcs.canonicalize(projected, key)
    except jcs.JcsError as exc:
        raise DigestError(DigestReason.UNREPRESENTABLE, exc.kind) from None


def as_list(tools: Iterable[Mapping[str, Any]]) -> list[Any]:
    """The tool list as a list, or :class:`DigestError` when it cannot be iterated."""
    if type(tools) is list:
        return tools
    try:
        return list(tools)
    except Exception as exc:  # noqa: BLE001 - not iterable, or an iterator that fails
        raise DigestError(DigestReason.TOOLS_NOT_A_LIST, type(exc).__name__) from None


def assemble(entries: list[Entry]) -> bytes:
    """The RFC 8785 array of the entries' canonical bytes, in the order given (step 3)."""
    return b"[" + b",".join([canonical for _, canonical in entries]) + b"]"


def catalog_hash(entries: list[Entry]) -> str:
    """``sha256:<hex>`` of the sorted entries' array: the catalog digest."""
    return "sha256:" + hashlib.sha256(assemble(entries)).hexdigest()


def per_name_digests(entries: list[Entry]) -> dict[str, str]:
    """One per-tool digest per name (``entries`` sorted).

    A name listed more than once with different definitions gets the digest of all of them
    together (the JSON array of their canonical bytes, in sorted order), which no single
    definition equals: an install of one of them is never taken for the discovered one,
    whichever sorts last (docs/model.md#installed-subsets). Identical repeats count once.
    """
    grouped: dict[str, list[bytes]] = {}
    for name, canonical in entries:
        if canonical not in (found := grouped.setdefault(name, [])):
            found.append(canonical)
    return {
        name: "sha256:"
        + hashlib.sha256(one[0] if len(one) == 1 else assemble([("", b) for b in one])).hexdigest()
        for name, one in grouped.items()
    }
