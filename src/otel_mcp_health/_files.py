"""Reading a file that configuration or the command line names, and saying why it could not be.

A service reads a pin file at start-up and a credential file before each probe. Either path may
name a FIFO, a socket or a device (``/dev/zero``) by mistake or by malice: opening one blocks, and
reading one may never end or fill memory. :func:`read_regular_file` opens without blocking,
accepts regular files only and reads at most its cap plus one byte, so it returns or raises at
once. (The CLI reads its input files plainly: a user may give it ``<(command)`` on purpose.)

Every reader of a file reports a failure in its own words; :func:`read_failure` is the one place
that tells which failure it was, so that the same failure always reads the same way to a caller.
"""

from __future__ import annotations

import enum
import os
import stat
from collections.abc import Mapping
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


class ReadFailure(enum.Enum):
    """Why a file could not be read: what a caller words, each in its own way."""

    #: Nothing has that name.
    MISSING = enum.auto()
    #: A directory (a plain open refuses only that), or for :func:`read_regular_file` anything
    #: but a regular file.
    NOT_A_FILE = enum.auto()
    #: Larger than the reader's cap.
    TOO_LARGE = enum.auto()
    #: The reader may not open it.
    DENIED = enum.auto()
    #: Its bytes are not UTF-8 text.
    NOT_TEXT = enum.auto()
    #: Any other failure to open or read it (the OS's words say which).
    UNREADABLE = enum.auto()


#: What a failure to read a file raises: the open or the read, the refusal, the decoding.
READ_ERRORS: Final = (OSError, FileRefusedError, UnicodeDecodeError)


def read_failure(exc: BaseException) -> ReadFailure:
    """Which failure ``exc`` (one of :data:`READ_ERRORS`) is."""
    if isinstance(exc, FileRefusedError):
        return ReadFailure.NOT_A_FILE if exc.reason == "not_a_file" else ReadFailure.TOO_LARGE
    if isinstance(exc, UnicodeDecodeError):
        return ReadFailure.NOT_TEXT
    if isinstance(exc, FileNotFoundError):
        return ReadFailure.MISSING
    if isinstance(exc, IsADirectoryError):
        return ReadFailure.NOT_A_FILE
    if isinstance(exc, PermissionError):
        return ReadFailure.DENIED
    return ReadFailure.UNREADABLE


def say_read_failure(exc: BaseException, words: Mapping[ReadFailure, str]) -> str:
    """``exc`` in a caller's words: ``words`` maps a failure to its text, where ``{os}`` stands
    for the OS's own words (``strerror``); a failure it leaves out reads as ``UNREADABLE``."""
    text = words.get(read_failure(exc), words[ReadFailure.UNREADABLE])
    return text.replace("{os}", str(exc.strerror if isinstance(exc, OSError) else None))


#: How a file given as input is spoken of where no caller needs other words (the CLI's inputs,
#: an outcome policy).
INPUT_FILE_WORDS: Final[Mapping[ReadFailure, str]] = {
    ReadFailure.MISSING: "no such file",
    ReadFailure.NOT_A_FILE: "is a directory, expected a file",
    ReadFailure.NOT_TEXT: "not UTF-8 text",
    ReadFailure.UNREADABLE: "cannot read ({os})",
}
