"""The instrumentation's per-server discoveries are bounded by count and by bytes.

A session without a discovery of its own is checked against its server's last complete
discovery (docs/model.md#scope), so the instrumentation keeps one per server: never more than
its count, never more than its byte budget, whatever the catalogs weigh.
"""

from __future__ import annotations

from typing import Any

from otel_mcp_health.core.server import CatalogKey
from otel_mcp_health.instrumentation._servers import (
    MAX_FORGOTTEN,
    Discovered,
    KnownTool,
    ServerDiscoveries,
    _size,
    known_tool,
)


def _server(name: str) -> CatalogKey:
    return CatalogKey(f"target-{name}", name, None)


def _discovery(tools: int, name_length: int = 8) -> Discovered:
    known = {f"{i:0{name_length}d}": KnownTool(frozenset({"x"}), None) for i in range(tools)}
    return Discovered(known, dict.fromkeys(known, "sha256:" + "0" * 64), "sha256:catalog")


def test_least_recently_used_servers_go_first_by_count() -> None:
    servers = ServerDiscoveries(max_servers=3)
    for key in ("a", "b", "c"):
        servers.remember(_server(key), _discovery(1))
    assert servers.get(_server("a")) is not None  # used: "b" is now the oldest
    servers.remember(_server("d"), _discovery(1))
    assert (len(servers), servers.get(_server("b"))) == (3, None)
    assert all(servers.get(_server(key)) is not None for key in ("a", "c", "d"))


def test_the_byte_budget_holds_whatever_the_catalogs_weigh() -> None:
    servers = ServerDiscoveries(max_bytes=1_000_000)
    for index in range(40):
        servers.remember(_server(f"server-{index}"), _discovery(200, name_length=64))
    assert 0 < servers.held_bytes <= 1_000_000
    assert 0 < len(servers) < 40
    assert servers.get(_server("server-39")) is not None  # the latest stays


def test_a_discovery_larger_than_the_budget_is_not_kept() -> None:
    servers = ServerDiscoveries(max_bytes=10_000)
    servers.remember(_server("big"), _discovery(500))
    assert (len(servers), servers.held_bytes, servers.get(_server("big"))) == (0, 0, None)


def test_a_new_discovery_replaces_the_servers_last() -> None:
    servers = ServerDiscoveries()
    servers.remember(_server("s"), _discovery(3))
    servers.remember(_server("s"), _discovery(1))
    found = servers.get(_server("s"))
    assert found is not None
    assert len(found.tools) == 1
    alone = ServerDiscoveries()
    alone.remember(_server("s"), _discovery(1))
    assert servers.held_bytes == alone.held_bytes  # the replaced discovery's bytes were freed


def test_a_known_tool_keeps_names_and_the_read_only_hint_only() -> None:
    tool: dict[str, Any] = {
        "name": "t",
        "description": "secret words",
        "inputSchema": {"type": "object", "required": ["a", "b"]},
        "annotations": {"readOnlyHint": True},
    }
    assert known_tool(tool) == KnownTool(frozenset({"a", "b"}), True)
    assert known_tool({"name": "t", "annotations": {"readOnlyHint": "yes"}}).read_only is None


def test_an_evicted_server_is_remembered_as_forgotten() -> None:
    servers = ServerDiscoveries(max_servers=1)
    servers.remember(_server("a"), _discovery(1))
    assert not servers.forgot(_server("a"))
    servers.remember(_server("b"), _discovery(1))  # by count
    assert (servers.forgot(_server("a")), servers.forgot(_server("b"))) == (True, False)
    servers.remember(_server("a"), _discovery(1))  # discovered again: no longer forgotten
    assert (servers.forgot(_server("a")), servers.forgot(_server("b"))) == (False, True)


def test_a_server_forgotten_by_bytes_is_remembered_as_forgotten() -> None:
    sizes = [_size(_server(key), _discovery(tools)) for key, tools in (("a", 20), ("b", 40))]
    servers = ServerDiscoveries(max_bytes=sum(sizes) - 1)
    servers.remember(_server("a"), _discovery(20))
    servers.remember(_server("b"), _discovery(40))  # pushes "a" out of the byte budget
    assert (servers.forgot(_server("a")), servers.get(_server("b")) is not None) == (True, True)
    servers.remember(_server("big"), _discovery(500))  # alone over the budget
    assert servers.forgot(_server("big"))
    assert servers.get(_server("big")) is None
    assert not servers.forgot(_server("never-seen"))
    servers.clear()
    assert not servers.forgot(_server("a"))


def test_the_forgotten_servers_are_bounded() -> None:
    servers = ServerDiscoveries(max_servers=1)
    for index in range(MAX_FORGOTTEN + 10):
        servers.remember(_server(f"s{index}"), _discovery(1))
    assert len(servers._forgotten) == MAX_FORGOTTEN
    assert not servers.forgot(_server("s0"))  # the least recently forgotten went first
    assert servers.forgot(_server(f"s{MAX_FORGOTTEN + 8}"))
