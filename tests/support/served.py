"""A server in a subprocess that prints its base URL on its first line of output.

The test servers (``check_servers.py``, ``probe_servers.py``, ``hostile_servers.py``, the
approval and matrix servers) listen first, then print ``http://127.0.0.1:PORT``: once the line
is read, the server accepts connections.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

LOCAL_URL = "http://127.0.0.1:"


@contextmanager
def served(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    timeout: float = 60.0,
) -> Iterator[str]:
    """Starts ``argv`` and yields the URL it prints on its first line (which must be a
    ``http://127.0.0.1:`` URL); terminates and reaps the process on exit.

    A server that prints nothing within ``timeout`` seconds is killed and the test fails, rather
    than hanging on a read that never returns.
    """
    process = subprocess.Popen(list(argv), cwd=cwd, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        stdout, lines = process.stdout, list[str]()
        reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        if not lines:
            process.kill()
            reader.join()
            raise AssertionError(f"{argv} printed no URL within {timeout} s")
        url = lines[0].strip()
        assert url.startswith(LOCAL_URL), url
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a server deaf to SIGTERM fails its test, reaped
            process.kill()
            process.wait()
            raise
