"""``otel-mcp-health probe`` against real MCP servers over stdio, streamable HTTP and SSE.

Every verdict is the product's own (the check's driver on the instrumentation and processor);
the test servers count the JSON-RPC messages they receive, so "one probe" and "no more requests
than the design says" are measured at the server, not at the prober.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.probe.conftest import (
    get,
    one,
    post,
    running,
    series,
    server_counts,
    stdio_command,
)

MODULES = """
[probe]
min_interval = 30

[module.default]
timeout = 15

[module.list_only]
call = false

[module.legacy]
era = "legacy"
timeout = 15
"""


def _target(name: str, transport: str, where: str, canary: str | None = None) -> str:
    key = f"command = {json.dumps(stdio_command())}" if transport == "stdio" else f'url = "{where}"'
    text = f'\n[[target]]\nname = "{name}"\ntransport = "{transport}"\n{key}\n'
    if canary is not None:
        text += f'[target.canary]\ntool = "{canary}"\narguments = {{ q = "x" }}\n'
    return text


def _probe(base: str, target: str, module: str | None = None) -> dict[str, float]:
    query = f"target={target}" + (f"&module={module}" if module else "")
    status, body = get(f"{base}/probe?{query}")
    assert status == 200, body
    return series(body)


def _paths(counts: dict[str, int], prefix: str) -> dict[str, int]:
    return {k.split(" ", 1)[1]: v for k, v in counts.items() if k.startswith(prefix + " ")}


@pytest.mark.parametrize("transport", ["stdio", "streamable_http", "sse"])
def test_a_healthy_server_is_healthy_with_one_discover_the_pages_and_the_call(
    servers: str, config_file: Callable[[str], Path], transport: str
) -> None:
    where = {"streamable_http": f"{servers}/plain/mcp", "sse": f"{servers}/sse"}.get(transport, "")
    path = config_file(MODULES + _target("t", transport, where, canary="lookup"))
    post(servers, "/reset")
    with running(path) as (_service, base):
        found = _probe(base, "t")
    assert found["probe_success"] == 1
    verdict = one(found, "mcp_health_probe_verdict")
    assert 'mcp_health_verdict="healthy"' in verdict
    assert 'mcp_health_call_first_failed_layer="none"' in verdict
    assert 'mcp_health_catalog_verdict="converged"' in one(
        found, "mcp_health_probe_catalog_verdict"
    )
    assert found["mcp_health_probe_catalog_tools"] == 7
    assert 'mcp_health_session_era="server/discover"' in one(found, "mcp_health_probe_catalog_info")
    sent = {
        "server/discover": found['mcp_health_probe_requests{mcp_method_name="server/discover"}'],
        "tools/list": found['mcp_health_probe_requests{mcp_method_name="tools/list"}'],
        "tools/call": found['mcp_health_probe_requests{mcp_method_name="tools/call"}'],
    }
    assert sent == {"server/discover": 1, "tools/list": 2, "tools/call": 1}
    assert len([n for n in found if n.startswith("mcp_health_probe_requests")]) == 3
    if transport != "stdio":  # what the server received: exactly what the prober says it sent
        prefix = "/plain" if transport == "streamable_http" else "/messages"
        assert _paths(server_counts(servers), prefix) == sent


def test_an_older_server_gets_one_initialize_per_probe_once_its_era_is_known(
    servers: str, config_file: Callable[[str], Path]
) -> None:
    path = config_file(
        MODULES.replace("min_interval = 30", "min_interval = 0.01")
        + _target("old", "streamable_http", f"{servers}/legacy/mcp")
    )
    post(servers, "/reset")
    with running(path) as (_service, base):
        first = _probe(base, "old", "list_only")
        time.sleep(0.05)
        second = _probe(base, "old", "list_only")
        third = _probe(base, "old", "legacy")
    assert first["probe_success"] == second["probe_success"] == third["probe_success"] == 1
    assert 'mcp_health_session_era="initialize"' in one(second, "mcp_health_probe_catalog_info")
    # The first probe learns the era (one refused server/discover); later probes send none.
    assert _paths(server_counts(servers), "/legacy") == {
        "server/discover": 1,
        "initialize": 3,
        "notifications/initialized": 3,
        "tools/list": 6,
        "DELETE": 3,  # each session closed cleanly (streamable HTTP's session termination)
    }
    assert 'mcp_method_name="server/discover"' not in " ".join(second)


def test_401_is_needs_auth_and_a_closed_port_is_transport_error(
    servers: str, config_file: Callable[[str], Path]
) -> None:
    path = config_file(
        MODULES
        + _target("authn", "streamable_http", f"{servers}/authn")
        + _target("closed", "streamable_http", "http://127.0.0.1:9/mcp")
    )
    with running(path) as (_service, base):
        auth, closed = _probe(base, "authn"), _probe(base, "closed")
    assert auth["probe_success"] == closed["probe_success"] == 0
    session = one(auth, "mcp_health_probe_session_verdict")
    assert 'mcp_health_verdict="needs_auth"' in session
    assert 'mcp_health_call_first_failed_layer="authorization"' in session
    down = one(closed, "mcp_health_probe_session_verdict")
    assert 'mcp_health_verdict="transport_error"' in down
    assert 'mcp_health_call_first_failed_layer="transport"' in down
    assert 'mcp_health_catalog_verdict="unverifiable"' in one(
        closed, "mcp_health_probe_catalog_verdict"
    )


def test_over_sse_401_is_needs_auth_and_a_closed_port_is_transport_error(
    servers: str, config_file: Callable[[str], Path]
) -> None:
    path = config_file(
        MODULES
        + _target("authn", "sse", f"{servers}/sse-authn")
        + _target("closed", "sse", "http://127.0.0.1:9/sse")
    )
    with running(path) as (_service, base):
        auth, closed = _probe(base, "authn"), _probe(base, "closed")
    assert auth["probe_success"] == closed["probe_success"] == 0
    for found, verdict, layer in (
        (auth, "needs_auth", "authorization"),
        (closed, "transport_error", "transport"),
    ):
        for family in ("mcp_health_probe_session_verdict", "mcp_health_probe_verdict"):
            series_name = one(found, family)
            assert f'mcp_health_verdict="{verdict}"' in series_name
            assert f'mcp_health_call_first_failed_layer="{layer}"' in series_name


def test_a_canary_answering_is_error_is_tool_failed(
    servers: str, config_file: Callable[[str], Path]
) -> None:
    path = config_file(MODULES + _target("t", "sse", f"{servers}/sse", canary="fail"))
    with running(path) as (_service, base):
        found = _probe(base, "t")
    assert found["probe_success"] == 0
    call = one(found, "mcp_health_probe_call_verdict")
    assert 'mcp_health_verdict="tool_failed"' in call
    assert 'gen_ai_tool_name="fail"' in call
    assert 'mcp_health_call_first_failed_layer="execution"' in call
    # The session itself is fine: the failure is the tool's.
    assert 'mcp_health_verdict="converged"' in one(found, "mcp_health_probe_session_verdict")


def test_only_configured_targets_and_modules_are_probed(
    servers: str, config_file: Callable[[str], Path]
) -> None:
    path = config_file(MODULES + _target("t", "streamable_http", f"{servers}/plain/mcp"))
    post(servers, "/reset")
    forged = f"{servers}/authn"
    with running(path) as (service, base):
        answers = [
            get(f"{base}/probe?target={forged}"),
            get(f"{base}/probe?target=nope"),
            get(f"{base}/probe"),
            get(f"{base}/probe?target=t&module=nope"),
            get(f"{base}/probe?target=t&url={forged}"),
            get(f"{base}/probe?target=t&target=u"),
        ]
        _status, metrics = get(f"{base}/metrics")
        assert service.stats.probes("t", "default") == 0
    assert [status for status, _ in answers] == [400] * 6
    assert all(forged not in body and "nope" not in body for _, body in answers)
    assert server_counts(servers) == {}  # nothing reached any server
    found = series(metrics)
    assert found['mcp_health_prober_refused_total{reason="unknown_target"}'] == 3
    assert found['mcp_health_prober_refused_total{reason="unknown_module"}'] == 1
    assert found['mcp_health_prober_refused_total{reason="bad_request"}'] == 2


def test_many_scrapes_inside_the_minimum_interval_are_one_probe(
    servers: str, config_file: Callable[[str], Path]
) -> None:
    path = config_file(MODULES + _target("t", "streamable_http", f"{servers}/plain/mcp", "lookup"))
    post(servers, "/reset")
    with running(path) as (service, base):
        answers: list[dict[str, float]] = []
        threads = [
            threading.Thread(target=lambda: answers.append(_probe(base, "t"))) for _ in range(6)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        later = _probe(base, "t")
        assert service.stats.probes("t", "default") == 1
    assert len(answers) == 6
    assert sorted(a["mcp_health_probe_cached"] for a in [*answers, later]) == [0] + [1] * 6
    assert later["mcp_health_probe_age_seconds"] > 0
    assert _paths(server_counts(servers), "/plain") == {
        "server/discover": 1,
        "tools/list": 2,
        "tools/call": 1,
    }


def test_the_scrape_timeout_header_bounds_the_probe(
    config_file: Callable[[str], Path],
) -> None:
    path = config_file(MODULES + _target("slow", "stdio", "", canary="slow"))
    with running(path) as (_service, base):
        started = time.monotonic()
        status, body = get(
            f"{base}/probe?target=slow", {"X-Prometheus-Scrape-Timeout-Seconds": "3"}
        )
        took = time.monotonic() - started
    assert status == 200, body
    assert took < 3, took
    found = series(body)
    assert found["probe_success"] == 0
    assert found["probe_duration_seconds"] < 3


def test_concurrent_probes_are_bounded_and_a_probe_without_a_slot_is_refused_busy(
    config_file: Callable[[str], Path],
) -> None:
    text = MODULES + _target("slow", "stdio", "", canary="slow") + _target("other", "stdio", "")
    path = config_file(text.replace("[probe]", "[probe]\nmax_concurrent = 1"))
    with running(path) as (service, base):
        header = {"X-Prometheus-Scrape-Timeout-Seconds": "4"}
        slow = threading.Thread(target=get, args=(f"{base}/probe?target=slow", header))
        slow.start()
        time.sleep(1)  # the slow probe holds the only slot
        status, body = get(
            f"{base}/probe?target=other", {"X-Prometheus-Scrape-Timeout-Seconds": "2"}
        )
        slow.join(timeout=30)
        after = get(f"{base}/probe?target=other")
        found = series(get(f"{base}/metrics")[1])
        assert service.stats.probes("other", "default") == 1
    assert status == 503, body
    assert after[0] == 200
    assert found['mcp_health_prober_refused_total{reason="busy"}'] == 1
