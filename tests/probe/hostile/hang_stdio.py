"""A stdio "server" that reads requests and never answers (and ignores SIGTERM)."""

import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
for _line in sys.stdin:
    time.sleep(0)
time.sleep(3600)
