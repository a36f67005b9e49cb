"""Fixtures of the ``pin`` suite: the check suite's live servers (reused, not copied) and ours."""

from __future__ import annotations

from tests.check.conftest import http_base, time_server

__all__ = ["http_base", "time_server"]
