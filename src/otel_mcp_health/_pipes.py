"""Standard streams that a reader who stops reading cannot break: ``classify ... | head -1``.

When the reading end of a pipe closes, the next write raises ``BrokenPipeError`` (EPIPE).
Nothing is wrong with the run: the reader has what it wanted. :class:`QuietPipe` swallows the
error, sends the rest of that stream to the null device and lets the command finish, so its exit
code still says what it judged (``0`` green, ``1`` not green, ``2`` an input error) and no
traceback appears. The interpreter flushes ``sys.stdout`` and ``sys.stderr`` once more at exit;
the descriptor then points at the null device, so that flush cannot report the closed pipe either.
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import TextIO


class QuietPipe(io.TextIOBase):
    """``stream`` (the process's standard output or error) with EPIPE turned into silence."""

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

    def fileno(self) -> int:
        """The stream's descriptor: a stdio server started by ``check`` writes its log there."""
        return self._stream.fileno()

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
