"""What ``otel-mcp-health pin`` does with the tools of a source: create, update or verify pins.

* create (default): adds the server's entry to the pin file (a new file, or a server it does not
  have yet) and prints what was pinned; a server already pinned needs ``--update``.
* ``--update``: prints the classified diff against the entry in the file and writes only with
  ``--accept``; exit code ``1`` when a change is pending and was not accepted.
* ``--verify``: judges the source's tools against the file like the run-time approval: exit
  ``0`` approved, ``1`` drifted or unpinned, ``2`` a usage error or an unreadable pin file;
  partial pins add a note naming the material members they never compared (exit unchanged).

The file is written whole, atomically (a temporary file beside it, then a rename), and only
after the new content rendered; every other server's entry is kept as it was, in its place. A
corrupt or unreadable pin file is one error line naming the file, exit code ``2``, and is never
overwritten.
"""

from __future__ import annotations

import glob
import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

from otel_mcp_health._files import (
    READ_ERRORS,
    ReadFailure,
    read_failure,
    read_pin_text,
    say_read_failure,
)
from otel_mcp_health.core.approval import judge_approval
from otel_mcp_health.core.digest import DigestError
from otel_mcp_health.core.pins import (
    PinFile,
    PinsError,
    ServerPins,
    ToolPin,
    member_digests,
    parse_pins,
    pin_server,
    render_pins,
)
from otel_mcp_health.core.server import ServerLabel
from otel_mcp_health.core.vocabulary import ApprovalVerdict
from otel_mcp_health.pin._diff import change_lines, diff_pins, label, shown, summary
from otel_mcp_health.pin._errors import PinInputError
from otel_mcp_health.pin._sources import Source

EXIT_OK: Final = 0
EXIT_DRIFT: Final = 1


@dataclass(frozen=True, slots=True)
class PinEntry:
    """The pin file and the server entry's globs (``None``: omitted, any value matches)."""

    path: str
    name: str
    address: str | None
    port: str | None


#: How a pin file that cannot be read is spoken of (a directory or a FIFO is a ``PinsError``).
_PIN_FILE_WORDS: Final = {
    ReadFailure.MISSING: "cannot read the pin file (no such file)",
    ReadFailure.NOT_TEXT: "corrupt pin file (not UTF-8 text)",
    ReadFailure.UNREADABLE: "cannot read the pin file ({os})",
}


def read_pins(path: str, *, missing_ok: bool) -> PinFile | None:
    """The pin file, ``None`` when it does not exist and ``missing_ok``; anything unreadable or
    invalid is one :class:`PinInputError` naming the file (its content is never quoted)."""
    try:
        text = read_pin_text(path)
    except PinsError as exc:
        raise PinInputError(f"{path}: cannot read the pin file ({exc.reason})") from None
    except READ_ERRORS as exc:
        if missing_ok and read_failure(exc) is ReadFailure.MISSING:
            return None
        raise PinInputError(f"{path}: {say_read_failure(exc, _PIN_FILE_WORDS)}") from None
    try:
        return parse_pins(text)
    except PinsError as exc:
        raise PinInputError(f"{path}: corrupt pin file ({exc})") from None


def _tool_pin(tool: Mapping[str, Any]) -> ToolPin:
    """A partial pin: only the members the source states for this tool."""
    members = {k: v for k, v in member_digests(tool).items() if k in tool}
    return ToolPin(str(tool["name"]), None, members)


def server_pins(source: Source, target: PinEntry) -> ServerPins:
    """The new entry: full pins (every projected member), or partial ones."""
    try:
        if not source.partial:
            return pin_server(
                source.tools,
                name=target.name,
                address=target.address,
                port=target.port,
                source=source.tag,
            )
        tools = tuple(sorted((_tool_pin(t) for t in source.tools), key=lambda p: p.name))
    except (DigestError, PinsError) as exc:
        raise PinInputError(f"the tools cannot be pinned ({exc.reason}): nothing pinned") from None
    return ServerPins(target.name, target.address, target.port, source.tag, tools)


def _write(path: str, pins: PinFile, read: PinFile | None = None) -> None:
    """Render, then replace the file atomically (never a half-written pin file). A symbolic link
    is followed (the file it names is replaced) and the file's permissions are kept. The
    temporary file is created exclusively (never through a link planted at its name), and a
    pin file that changed since it was ``read`` is refused (another edit is never lost)."""
    try:
        text = render_pins(pins)
    except PinsError as exc:
        raise PinInputError(f"{path}: the pins cannot be written ({exc.reason})") from None
    if read_pins(path, missing_ok=True) != read:
        raise PinInputError(f"{path}: the pin file changed while pin ran: nothing written")
    final = Path(path).resolve()
    handle, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    temporary = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        if final.exists():
            temporary.chmod(stat.S_IMODE(final.stat().st_mode))
        temporary.replace(final)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise PinInputError(f"{path}: cannot write the pin file ({exc.strerror})") from None


def _entry(current: PinFile | None, new: ServerPins) -> ServerPins | None:
    """The entry of the file that ``new`` replaces (the same name, address and port globs)."""
    servers = current.servers if current is not None else ()
    return next((entry for entry in servers if entry.key == new.key), None)


def _shadowing(merged: PinFile, source: Source, new: ServerPins) -> ServerPins | None:
    """An entry that ``new`` would take over or be taken over by in the file as it would be
    written (:meth:`PinFile.takeovers`), or the one the server's own label matches first when
    that is not ``new`` (``new`` would then never apply to it)."""
    taken = merged.takeovers(new)
    if taken:  # the new entry would judge another entry's servers, or the reverse
        return taken[0]
    if source.name is None:
        return None
    found = merged.for_server(ServerLabel(source.name, source.address, source.port))
    return None if found is None or found.key == new.key else found


def create(
    current: PinFile | None,
    source: Source,
    target: PinEntry,
    *,
    update: bool,
    accept: bool,
    out: TextIO,
) -> int:
    """Create or update the server's entry in ``current`` (``None``: a new file), see the module."""
    new = server_pins(source, target)
    old = _entry(current, new)
    if old is not None and not update:
        raise PinInputError(
            f"{target.path}: {label(new)} is already pinned; use --update to review the changes"
        )
    changes = diff_pins(old, new)
    out.write(f"{label(new)}: {summary(changes)}\n")
    out.writelines(change_lines(changes))
    if old is not None and old.source != new.source:
        out.write(f"  source    {shown(old.source or '-')} -> {shown(new.source or '-')}\n")
    if old == new:
        out.write("no change: nothing written\n")
        return EXIT_OK
    merged = (current or PinFile()).upsert(new)
    shadow = _shadowing(merged, source, new)
    if shadow is not None:
        raise PinInputError(
            f"{target.path}: the earlier entry {label(shadow)} matches this server first: "
            "the new entry would never apply (entries match in file order); nothing written"
        )
    if update and not accept:
        out.write("not written: run again with --accept to approve these changes\n")
        return EXIT_DRIFT
    _write(target.path, merged, current)
    out.write(f"written: {len(new.tools)} tools pinned\n")
    return EXIT_OK


def verify(pins: PinFile, source: Source, server: ServerLabel, out: TextIO) -> int:
    """Judge the source's tools against the pin file, exactly like the run-time approval."""
    entry = pins.for_server(server)
    approval = judge_approval(entry, source.tools)
    reason = f" ({approval.reason})" if approval.reason else ""
    pinned = label(entry) if entry is not None else f"server {shown(server.name or '')}"
    out.write(f"{approval.verdict.value}{reason}: {pinned}: {summary(approval.changes)}\n")
    out.writelines(change_lines(approval.changes))
    if approval.uncompared_members:  # approved or not, never a plain approval: say what was not
        out.write(
            "  note      partial pins: "
            + ", ".join(approval.uncompared_members)
            + " not compared (re-pin from the live server to compare them)\n"
        )
    return EXIT_OK if approval.verdict is ApprovalVerdict.APPROVED else EXIT_DRIFT


def escaped(value: str | None) -> str | None:
    """A literal label value as a glob that matches only itself."""
    return None if value is None else glob.escape(value)
