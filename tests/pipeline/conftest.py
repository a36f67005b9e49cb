"""Fixtures of the pipeline tests: the real collector, Prometheus and Alertmanager on 127.0.0.1.

Nothing here skips: CI provisions every binary (``make provision``), so a missing one fails the
test with the command that installs it.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The stack and the agent scenarios are plain modules next to this file.
sys.path.insert(0, str(Path(__file__).parent))
