"""Standard output that a reader who stops reading cannot break: ``classify ... | head -1``.

When the reading end of a pipe closes, the next write raises ``BrokenPipeError`` (EPIPE).
Nothing is wrong with the run: the reader has what it wanted. :class:`QuietStdout` swallows the
error, sends the rest of the output to the null device and lets the command finish, so its exit
code still says what it judged (``0`` green, ``1`` not green) and no traceback reaches the
terminal. The interpreter flushes ``sys.stdout`` once more at exit; the descriptor then points at
the null device, so that flush cannot report the closed pipe either.
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import TextIO


class QuietStdout(io.TextIOBase):
    """``stream`` (the process's standard output) with EPIPE turned into silence."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream
        #: The reader went away: everything from here on is discarded.
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                self._stream.write(text)
            except BrokenPipeError:
                self._discard_from_now_on()
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._discard_from_now_on()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def writable(self) -> bool:
        return True

    def _discard_from_now_on(self) -> None:
        self.reader_gone = True
        # A stream without a descriptor (a test's StringIO) has no exit flush to protect.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)
