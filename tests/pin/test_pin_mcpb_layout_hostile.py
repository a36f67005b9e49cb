"""Bundles where ``pin --mcpb`` pins one manifest and the MCPB toolchain's own unzipper
(fflate ``unzipSync``, used by ``mcpb unpack``, after stripping the ``MCPB_SIG_V1`` block) or a
Windows extractor would install another. Each must be refused (exit 2) or pin the manifest the
toolchain installs."""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.pin.pin_support import manifest, pin

_A = json.dumps(manifest([{"name": "benign", "description": "ok"}])).encode()
_B = json.dumps(manifest([{"name": "evil", "description": "steal"}])).encode()


def _zip(entries: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, data in entries:
            archive.writestr(zipfile.ZipInfo(name), data)
    return buffer.getvalue()


def _split(data: bytes) -> tuple[bytes, bytes]:
    """The local part and the central directory of a one-file zip."""
    end = data.rfind(b"PK\x05\x06")
    size, offset = struct.unpack("<II", data[end + 12 : end + 20])
    return data[:offset], data[offset : offset + size]


def _shift(directory: bytes, delta: int) -> bytes:
    """A one-entry central directory whose local header offset moved by ``delta``."""
    (offset,) = struct.unpack("<I", directory[42:46])
    return directory[:42] + struct.pack("<I", offset + delta) + directory[46:]


def _eocd(size: int, offset: int) -> bytes:
    return b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 1, 1, size, offset, 0)


def _prepended() -> bytes:
    """fflate reads the central directory at the EOCD's offset (B's); Python's zipfile shifts
    it by the bytes it thinks were prepended and reads A's."""
    local_b, dir_b = _split(_zip([("manifest.json", _B)]))
    local_a, dir_a = _split(_zip([("manifest.json", _A)]))
    start_a = len(local_b) + len(dir_b)
    concat = start_a + len(local_a) - len(local_b)
    dir_a = _shift(dir_a, start_a - concat)
    return local_b + dir_b + local_a + dir_a + _eocd(len(dir_a), len(local_b))


def _zip64_locator() -> bytes:
    """Python's zipfile follows a ZIP64 locator (to A) whatever the EOCD says; fflate follows it
    only when the EOCD's fields are saturated, so it reads the EOCD's directory (B)."""
    local_b, dir_b = _split(_zip([("manifest.json", _B)]))
    local_a, dir_a = _split(_zip([("manifest.json", _A)]))
    at_a = len(local_b) + len(dir_b)
    dir_a = _shift(dir_a, at_a)
    body = local_b + dir_b + local_a + dir_a
    record = b"PK\x06\x06" + struct.pack(
        "<QHHIIQQQQ", 44, 45, 45, 0, 0, 1, 1, len(dir_a), at_a + len(local_a)
    )
    locator = b"PK\x06\x07" + struct.pack("<IQI", 0, len(body), 1)
    return body + record + locator + _eocd(len(dir_b), len(local_b))


def _signature_block() -> bytes:
    """``mcpb`` strips everything from ``MCPB_SIG_V1`` on before unzipping (A); Python's zipfile
    finds the last EOCD, hidden in the "signature" (B)."""
    bundle_a = _zip([("manifest.json", _A)])
    local_b, dir_b = _split(_zip([("manifest.json", _B)]))
    start = len(bundle_a) + len(b"MCPB_SIG_V1") + 4
    dir_b = _shift(dir_b, start)
    blob = local_b + dir_b + _eocd(len(dir_b), start + len(local_b))
    return bundle_a + b"MCPB_SIG_V1" + struct.pack("<I", len(blob)) + blob + b"MCPB_SIG_END"


@pytest.mark.parametrize(
    ("build", "installed"),
    [(_prepended, "evil"), (_zip64_locator, "evil"), (_signature_block, "benign")],
    ids=["prepended", "zip64", "signed"],
)
def test_a_bundle_whose_layout_readers_disagree_on_is_refused_or_pins_what_mcpb_installs(
    tmp_path: Path, build: Callable[[], bytes], installed: str
) -> None:
    # "installed": the manifest fflate's unzipSync returns (measured with fflate 0.8.2, the
    # version @anthropic-ai/mcpb 2.1.2 depends on).
    path = tmp_path / "x.mcpb"
    path.write_bytes(build())
    pins = tmp_path / "pins.toml"
    result = pin("--pins", pins, "--name", "b", "--mcpb", path)
    written = pins.read_text(encoding="utf-8") if pins.exists() else ""
    other = "benign" if installed == "evil" else "evil"
    assert result.code == 2 or (installed in written and other not in written), (
        f"pinned the {other!r} manifest while the MCPB toolchain installs {installed!r}"
    )


@pytest.mark.parametrize(
    "second",
    [
        "manifest.json.",
        "manifest.json ",
        "C:manifest.json",
        "C:/manifest.json",
        "//s/h/manifest.json",
    ],
    ids=["trailing-dot", "trailing-space", "drive-relative", "drive-absolute", "unc"],
)
def test_a_second_manifest_a_windows_extractor_writes_over_the_first_is_refused(
    tmp_path: Path, second: str
) -> None:
    # Python's extractall on Windows strips drive/UNC prefixes and trailing dots and spaces; the
    # Win32 API strips trailing dots and spaces: each name lands on manifest.json, written last.
    path = tmp_path / "x.mcpb"
    path.write_bytes(_zip([("manifest.json", _A), (second, _B)]))
    result = pin("--pins", tmp_path / "pins.toml", "--name", "b", "--mcpb", path)
    assert result.code == 2
    assert "manifest.json twice" in result.err


def test_a_manifest_stored_as_a_symlink_is_refused(tmp_path: Path) -> None:
    # Info-ZIP unzip (and macOS ditto) restore a symlink entry as a link: its "content" is the
    # link target. A target that is itself valid JSON pins "benign" while the extracted
    # manifest.json resolves to the member named by that target, which holds "evil".
    # A short target: it must fit a file name (255 bytes) for the extractor to create it.
    benign = json.dumps({"name": "x", "tools": [{"name": "benign"}]}, separators=(",", ":"))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        link = zipfile.ZipInfo("manifest.json")
        link.create_system = 3
        link.external_attr = 0o120777 << 16
        archive.writestr(link, benign)
        archive.writestr(benign, _B)
    path = tmp_path / "x.mcpb"
    path.write_bytes(buffer.getvalue())
    result = pin("--pins", tmp_path / "pins.toml", "--name", "b", "--mcpb", path)
    assert result.code == 2, "pinned a symlink's target string as the manifest"


def test_a_second_manifest_named_by_a_unicode_path_extra_field_is_refused(tmp_path: Path) -> None:
    # Info-ZIP unzip, 7-Zip and libarchive name a member by its Unicode Path extra field (0x7075)
    # when its CRC matches the header's name; Python 3.11's zipfile ignores the field. So
    # "readme.txt" is extracted as manifest.json, after (over) the real one.
    unicode_path = b"manifest.json"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", _A)
        other = zipfile.ZipInfo("readme.txt")
        field = struct.pack("<BI", 1, zlib.crc32(b"readme.txt")) + unicode_path
        other.extra = struct.pack("<HH", 0x7075, len(field)) + field
        archive.writestr(other, _B)
    path = tmp_path / "x.mcpb"
    path.write_bytes(buffer.getvalue())
    result = pin("--pins", tmp_path / "pins.toml", "--name", "b", "--mcpb", path)
    assert result.code == 2


def test_a_signed_bundle_and_a_zip_comment_are_read(tmp_path: Path) -> None:
    # What `mcpb sign` writes: the zip, MCPB_SIG_V1, the signature's length, the signature, and
    # MCPB_SIG_END; the zip's own comment is allowed too. Both pin the one manifest.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.comment = b"built by mcpb pack"
        archive.writestr("manifest.json", _A)
    signature = b"\x30\x82" + bytes(300)
    signed = buffer.getvalue() + b"MCPB_SIG_V1" + struct.pack("<I", len(signature)) + signature
    path = tmp_path / "x.mcpb"
    path.write_bytes(signed + b"MCPB_SIG_END")
    pins = tmp_path / "pins.toml"
    result = pin("--pins", pins, "--name", "b", "--mcpb", path)
    assert result.code == 0, result.err
    assert "benign" in pins.read_text(encoding="utf-8")
    # a length that does not frame the block is refused
    path.write_bytes(signed[:-1] + b"MCPB_SIG_END")
    broken = pin("--pins", tmp_path / "other.toml", "--name", "b", "--mcpb", path)
    assert broken.code == 2
    assert "signature block" in broken.err
