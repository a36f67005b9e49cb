"""Fixtures of the ``check`` suite: third-party servers installed by scripts/provision-check.sh
and our own failing servers (``check_servers.py``), each started the way ``check`` meets them."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from tests.check.check_support import EVERYTHING, PROVISION, SERVERS
from tests.support.served import served


@pytest.fixture(scope="session")
def everything() -> list[str]:
    """The TypeScript SDK's reference server (``@modelcontextprotocol/server-everything``)."""
    assert EVERYTHING.is_file(), f"server-everything is not installed: {PROVISION}"
    return ["--", "node", str(EVERYTHING), "stdio"]


@pytest.fixture(scope="session")
def time_server() -> list[str]:
    """``mcp-server-time`` from PyPI (the ``test`` extra), over stdio."""
    import importlib.util

    assert importlib.util.find_spec("mcp_server_time"), f"mcp-server-time missing: {PROVISION}"
    return ["--", sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]


@pytest.fixture(scope="session")
def http_base() -> Iterator[str]:
    """Our HTTP server in a subprocess (its paths are listed in ``check_servers.py``)."""
    with served([sys.executable, str(SERVERS), "http"]) as url:
        yield url
