"""Tools from an MCP Bundle (MCPB): its ``manifest.json``, alone or inside a ``.mcpb`` zip.

The bundle is read, never extracted: only the one member named ``manifest.json`` at the root of
the zip is opened, its declared and its actual size capped (a zip bomb stops at the cap), and a
zip holding that name twice, in any spelling an unzip tool reads as the same root file
(``./manifest.json``, ``MANIFEST.JSON``, ``a\\..\\manifest.json``), is refused: two readers could
pick different copies. ``--sha256 HEX`` is checked over the bytes of the file given (the
registry's ``server.json`` states it for the ``.mcpb`` file as ``fileSha256``) before anything is
parsed; a mismatch writes nothing.

What is pinned, in order of preference:

* a static ``tools/list`` response in the manifest's ``_meta`` (``_meta.<namespace>.
  static_responses["tools/list"].tools``): whole tool definitions, full pins;
* else the manifest's ``tools`` array, which states a ``name`` and usually a ``description`` per
  tool: partial pins, only the members each entry states.
"""

from __future__ import annotations

import hashlib
import ntpath
import re
import stat
import struct
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Final

from otel_mcp_health._files import ReadFailure, say_read_failure
from otel_mcp_health.core.digest import PROJECTED_MEMBERS
from otel_mcp_health.pin._bundle_zip import LayoutError, open_zip
from otel_mcp_health.pin._errors import PinInputError
from otel_mcp_health.pin._sources import Source, parse_json, tool_objects

#: The largest ``manifest.json`` read (declared and actual size, inside or outside a zip).
MAX_MANIFEST_BYTES: Final = 4 * 1024 * 1024
MANIFEST: Final = "manifest.json"
_HEX64: Final = re.compile(r"(?:[sS][hH][aA]256:)?([0-9a-fA-F]{64})")
_CHUNK: Final = 1024 * 1024
_UNICODE_PATH: Final = 0x7075


def expected_sha256(raw: str | None) -> str | None:
    """``--sha256``: 64 hex digits (a ``sha256:`` prefix in any case allowed), lower-cased."""
    if raw is None:
        return None
    match = _HEX64.fullmatch(raw.strip())
    if match is None:
        raise PinInputError("--sha256 expects 64 hexadecimal digits (the bundle's SHA-256)")
    return match.group(1).lower()


def _sha256(handle: IO[bytes]) -> str:
    digest = hashlib.sha256()
    while chunk := handle.read(_CHUNK):
        digest.update(chunk)
    handle.seek(0)
    return digest.hexdigest()


def _capped(handle: IO[bytes], shown: str) -> bytes:
    data = handle.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        raise PinInputError(f"{shown}: manifest.json is larger than {MAX_MANIFEST_BYTES} bytes")
    return data


def _at_root(name: str) -> bool:
    """``name`` reads as the root ``manifest.json`` to some unzip tool: ``./manifest.json``,
    ``/manifest.json``, ``a/../manifest.json``, backslashes, another case, and what a Windows
    extractor makes of a drive or share prefix (``C:``, ``//server/share/``) or of trailing dots
    and spaces count, so a bundle cannot hold a second copy that another reader would pick."""
    parts: list[str] = []
    for raw in ntpath.splitdrive(name.replace("\\", "/"))[1].split("/"):
        part = raw if raw in (".", "..") else raw.rstrip(" .")
        if part == "..":
            if not parts:
                return False  # above the root (zip slip): never the bundle's manifest
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return [part.casefold() for part in parts] == [MANIFEST]


def _unicode_paths(extra: bytes) -> list[str]:
    """The names an Info-ZIP Unicode Path extra field (0x7075) gives a member: unzip, 7-Zip and
    libarchive extract the member under that name, Python's ``zipfile`` ignores it."""
    names, at = [], 0
    while at + 4 <= len(extra):
        kind, size = struct.unpack_from("<HH", extra, at)
        if kind == _UNICODE_PATH and size >= 5:
            names.append(extra[at + 9 : at + 4 + size].decode("utf-8", "replace"))
        at += 4 + size
    return names


def _spellings(info: zipfile.ZipInfo) -> list[str]:
    return [info.filename, *_unicode_paths(info.extra)]


def _not_regular(info: zipfile.ZipInfo) -> bool:
    """A member a Unix extractor restores as a link, device or directory, not a file."""
    kind = stat.S_IFMT(info.external_attr >> 16)
    return kind not in (0, stat.S_IFREG)


def _from_zip(handle: IO[bytes], path: str) -> bytes:
    """The bytes of the root ``manifest.json`` of the zip, capped; nothing else is read."""
    try:
        with open_zip(handle) as bundle:
            found = [
                info
                for info in bundle.infolist()
                if any(_at_root(name) for name in _spellings(info))
            ]
            if len(found) != 1:
                what = "no manifest.json at its root" if not found else "manifest.json twice"
                raise PinInputError(f"{path}: the bundle has {what}")
            if _not_regular(found[0]):
                raise PinInputError(f"{path}: the bundle's manifest.json is not a regular file")
            if found[0].file_size > MAX_MANIFEST_BYTES:
                raise PinInputError(
                    f"{path}: manifest.json is larger than {MAX_MANIFEST_BYTES} bytes"
                )
            with bundle.open(found[0]) as member:
                return _capped(member, path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError):
        # RuntimeError: an encrypted member; NotImplementedError: an unknown compression.
        raise PinInputError(f"{path}: not a readable .mcpb (zip) bundle") from None
    except LayoutError as exc:
        raise PinInputError(f"{path}: not a readable .mcpb (zip) bundle: {exc}") from None


#: How a bundle or manifest that cannot be read is spoken of.
_BUNDLE_WORDS: Final = {
    ReadFailure.MISSING: "no such bundle or manifest",
    ReadFailure.NOT_A_FILE: "is a directory, expected manifest.json or a .mcpb",
    ReadFailure.UNREADABLE: "cannot read the bundle ({os})",
}


def _manifest_bytes(path: str, sha256: str | None) -> tuple[bytes, str]:
    """The manifest's bytes and the SHA-256 of the file given (checked against ``sha256``)."""
    try:
        with Path(path).open("rb") as handle:
            actual = _sha256(handle)
            if sha256 is not None and actual != sha256:
                raise PinInputError(f"{path}: SHA-256 mismatch, the bundle is not the one expected")
            if handle.read(4) == b"PK\x03\x04":
                handle.seek(0)
                return _from_zip(handle, path), actual
            handle.seek(0)
            return _capped(handle, path), actual
    except OSError as exc:
        raise PinInputError(f"{path}: {say_read_failure(exc, _BUNDLE_WORDS)}") from None


def _static_responses(manifest: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every ``_meta.<namespace>.static_responses`` object, in namespace order."""
    meta = manifest.get("_meta")
    if not isinstance(meta, dict):
        return []
    found: list[Mapping[str, Any]] = []
    for _, space in sorted(meta.items()):
        responses = space.get("static_responses") if isinstance(space, dict) else None
        if isinstance(responses, dict):
            found.append(responses)
    return found


def _static_tools(manifest: Mapping[str, Any], path: str) -> list[Any] | None:
    """The one static ``tools/list`` tools array of the bundle (two different ones: refused)."""
    lists = []
    for responses in _static_responses(manifest):
        listing = responses.get("tools/list")
        if isinstance(listing, dict) and isinstance(listing.get("tools"), list):
            lists.append(listing["tools"])
    if any(other != lists[0] for other in lists[1:]):
        raise PinInputError(f"{path}: the bundle states two different static tools/list answers")
    return lists[0] if lists else None


def _static_name(manifest: Mapping[str, Any]) -> str | None:
    """``serverInfo.name`` of a static ``initialize`` response: the label the server announces."""
    for responses in _static_responses(manifest):
        answer = responses.get("initialize")
        info = answer.get("serverInfo") if isinstance(answer, dict) else None
        if isinstance(info, dict) and isinstance(info.get("name"), str):
            return str(info["name"])
    return None


def mcpb_source(path: str, sha256: str | None) -> Source:
    """The tools an MCPB bundle (``.mcpb`` zip or ``manifest.json``) states, see the module."""
    data, actual = _manifest_bytes(path, sha256)
    manifest = parse_json(data, f"{path}: manifest.json")
    if not isinstance(manifest, dict):
        raise PinInputError(f"{path}: manifest.json is not a JSON object")
    notes: list[str] = []
    if manifest.get("tools_generated") is True:
        notes.append(
            "the manifest says tools_generated: tools the server adds at run time are not "
            "pinned and will read added (drifted)"
        )
    tag = f"mcpb:sha256:{actual}"
    static = _static_tools(manifest, path)
    if static is not None:
        tools = tool_objects(static, f"{path}: static tools/list")
        return Source(tools, tag, name=_static_name(manifest), notes=tuple(notes))
    stated = manifest.get("tools")
    if stated is None:
        raise PinInputError(f"{path}: the manifest states no tools (no tools array)")
    tools = tool_objects(stated, f"{path}: manifest tools")
    notes.append(
        "partial pins: the manifest states only "
        + ", ".join(sorted({k for t in tools for k in t if k in PROJECTED_MEMBERS}))
        + " per tool; the other members (inputSchema, annotations, ...) are not pinned"
    )
    return Source(tools, tag, partial=True, name=_static_name(manifest), notes=tuple(notes))
