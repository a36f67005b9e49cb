"""Reading a small file that configuration names, without ever blocking on it (private).

A service reads a pin file at start-up and a credential file before each probe. Either path may
name a FIFO, a socket or a device (``/dev/zero``) by mistake or by malice: opening one blocks, and
reading one may never end or fill memory. :func:`read_regular_file` opens without blocking,
accepts regular files only and reads at most its cap plus one byte, so it returns or raises at
once. (The CLI reads its input files plainly: a user may give it ``<(command)`` on purpose.)
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, Literal

from otel_mcp_health.core.pin_codec import MAX_PIN_FILE_BYTES
from otel_mcp_health.core.pins import PinsError

_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)  # a terminal never becomes a daemon's controlling terminal
)


class FileRefusedError(Exception):
    """The path names something that is not a regular file, or a file larger than the cap."""

    def __init__(self, reason: Literal["not_a_file", "too_large"]) -> None:
        super().__init__(reason)
        self.reason = reason


def read_regular_file(path: str, cap: int) -> bytes:
    """The bytes of ``path``: a regular file of at most ``cap`` bytes, opened without blocking;
    else :class:`FileRefusedError`, or :class:`OSError` when it cannot be opened or read."""
    try:
        fd = os.open(path, _FLAGS)
    except ValueError:  # a NUL in the path: nothing on disk has that name
        raise FileRefusedError("not_a_file") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise FileRefusedError("not_a_file")
        data = handle.read(cap + 1)
    if len(data) > cap:
        raise FileRefusedError("too_large")
    return data


def read_pin_text(path: str) -> str:
    """The text of the pin file: a regular file of at most ``MAX_PIN_FILE_BYTES``, opened without
    blocking so that a FIFO, a socket or a device never stalls the host at start-up (nor fills
    its memory); else ``PinsError`` (``pins_not_a_file``, ``pins_too_large``), OSError or
    UnicodeDecodeError."""
    try:
        data = read_regular_file(path, MAX_PIN_FILE_BYTES)
    except FileRefusedError as exc:
        too_large = f"larger than {MAX_PIN_FILE_BYTES} bytes"
        why = "not a regular file" if exc.reason == "not_a_file" else too_large
        raise PinsError(f"pins_{exc.reason}", why) from None
    return data.decode("utf-8")


@contextmanager
def read_errors(
    path: str, error: Callable[[str], Exception], *, missing: str, directory: str, unreadable: str
) -> Iterator[None]:
    """Reading ``path`` inside: a missing file, a directory or any other ``OSError`` becomes
    ``error("<path>: <missing>")``, ``error("<path>: <directory>")`` or
    ``error("<path>: <unreadable> (<strerror>)")``, never a traceback."""
    try:
        yield
    except FileNotFoundError:
        raise error(f"{path}: {missing}") from None
    except IsADirectoryError:
        raise error(f"{path}: {directory}") from None
    except OSError as exc:
        raise error(f"{path}: {unreadable} ({exc.strerror})") from None
