"""The zip of a ``.mcpb`` bundle, accepted only in the layout every reader reads alike (private).

Zip readers find members through the end record at the file's end, and they disagree when the
bytes are not laid out as written: Python's ``zipfile`` shifts every offset by bytes it believes
were prepended and follows a ZIP64 locator wherever one sits, while the MCPB toolchain (``mcpb
unpack``, which unzips with fflate's ``unzipSync``) reads offsets as written, and first cuts off a
signature block (``MCPB_SIG_V1``, a 4-byte little-endian length, the signature, ``MCPB_SIG_END``).
A crafted bundle could therefore pin one manifest while the host installs another. :func:`open_zip`
accepts the layout on which they agree and refuses anything else:

- a trailing signature block must frame exactly its stated length and end the file;
- the end record ends the zip (its comment included), and holds no second end record;
- the central directory ends where the end record starts: nothing prepended, nothing between;
- one disk, no ZIP64 (no locator, no saturated field: a bundle under 4 GiB never needs it).
"""

from __future__ import annotations

import io
import struct
import zipfile
from typing import IO, Final

SIG_HEADER: Final = b"MCPB_SIG_V1"
SIG_FOOTER: Final = b"MCPB_SIG_END"
#: The longest signature block searched for (a PKCS#7 signature with its certificate chain).
MAX_SIGNATURE_BYTES: Final = 1024 * 1024
_END: Final = b"PK\x05\x06"
_END_SIZE: Final = 22
_LOCATOR: Final = b"PK\x06\x07"
_MAX_TAIL: Final = _END_SIZE + 0xFFFF  # the end record and the longest comment


class LayoutError(Exception):
    """The zip is not laid out as every reader reads alike; the message names the fault."""


def _read_at(handle: IO[bytes], offset: int, size: int) -> bytes:
    handle.seek(offset)
    return handle.read(size)


def _unsigned_length(handle: IO[bytes], size: int) -> int:
    """Where the zip ends: before a signature block that ends the file, else at the file's end."""
    if size < len(SIG_FOOTER) or _read_at(handle, size - len(SIG_FOOTER), 12) != SIG_FOOTER:
        return size
    start = max(0, size - MAX_SIGNATURE_BYTES)
    tail = _read_at(handle, start, size - start)
    at = tail.rfind(SIG_HEADER)
    if at < 0 or at + len(SIG_HEADER) + 4 > len(tail):
        raise LayoutError("a signature block without its MCPB_SIG_V1 header")
    (length,) = struct.unpack_from("<I", tail, at + len(SIG_HEADER))
    if start + at + len(SIG_HEADER) + 4 + length + len(SIG_FOOTER) != size:
        raise LayoutError("a signature block whose length does not frame it")
    return start + at


def _central_directory(handle: IO[bytes], length: int) -> int:
    """The offset of the central directory of the zip in the first ``length`` bytes."""
    start = max(0, length - _MAX_TAIL)
    tail = _read_at(handle, start, length - start)
    at = tail.rfind(_END)
    if at < 0 or at + _END_SIZE > len(tail):
        raise LayoutError("no zip end record")
    disk, cd_disk, here, total, cd_size, cd_offset, comment = struct.unpack_from(
        "<HHHHIIH", tail, at + 4
    )
    end = start + at
    if at + _END_SIZE + comment != len(tail):
        raise LayoutError("bytes after the zip's end record")
    if (disk, cd_disk) != (0, 0) or here != total or 0xFFFF in (here, total):
        raise LayoutError("a multi-disk or ZIP64 zip")
    locator = end >= 20 and _read_at(handle, end - 20, 4) == _LOCATOR
    if locator or 0xFFFFFFFF in (cd_size, cd_offset):
        raise LayoutError("a ZIP64 zip")
    if cd_offset + cd_size != end:
        raise LayoutError("bytes before the zip or between its directory and end record")
    return int(cd_offset)


class _Prefix(io.RawIOBase):
    """The first ``length`` bytes of ``raw`` as a file of their own (``zipfile`` never sees the
    signature block)."""

    def __init__(self, raw: IO[bytes], length: int) -> None:
        super().__init__()
        self._raw, self._length, self._pos = raw, length, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._length}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        data = _read_at(self._raw, self._pos, max(0, min(len(buffer), self._length - self._pos)))
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)


def open_zip(handle: IO[bytes]) -> zipfile.ZipFile:
    """The bundle's zip, read as every reader reads it; :class:`LayoutError` (its message names
    the layout fault, never the content) or ``zipfile.BadZipFile`` otherwise."""
    size = handle.seek(0, io.SEEK_END)
    length = _unsigned_length(handle, size)
    directory = _central_directory(handle, length)
    bundle = zipfile.ZipFile(io.BufferedReader(_Prefix(handle, length)))
    if bundle.start_dir != directory or any(
        info.header_offset >= directory for info in bundle.infolist()
    ):
        bundle.close()
        raise LayoutError("members outside the zip's data")
    return bundle
