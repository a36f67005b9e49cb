"""Approval at run time against hostile servers and configurations: real client, in-process servers.

Each test states what the approval must do when a server or a configuration tries to escape it.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from otel_mcp_health import attributes as A
from otel_mcp_health.core.pins import pin_server
from tests.approval_hostile.hostile_servers import Mutable
from tests.integration.approval_servers import CANARY_PIN_PATH, base_tools, tools, wire
from tests.integration.test_approval_privacy import instrumented
from tests.integration.test_approval_zero_code import write_pins

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:`LoggingHandler` in `opentelemetry-sdk`:DeprecationWarning"),
]
GREEN = {"healthy", "unverified"}  # "unverified" is what a plain call reads here (no verifier)


@pytest.fixture(params=["legacy", "auto"])
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def pins(tmp_path: Path) -> Path:
    return write_pins(tmp_path, [pin_server(wire(base_tools()), name="rt-mutable")])


def spans(t: Any, prefix: str) -> list[dict[str, Any]]:
    return [
        dict(s.attributes or {})
        for s in t.pipeline.spans()
        if s.name.startswith(prefix) and A.SESSION_KEY in (s.attributes or {})
    ]


def discoveries(t: Any) -> list[dict[str, Any]]:
    return [a for a in spans(t, "tools/list") if A.CATALOG_APPROVAL in a]


def v(a: dict[str, Any]) -> tuple[Any, ...]:
    return a.get(A.CALL_APPROVAL), a.get(A.VERDICT), a.get(A.REASON)


async def test_a_tool_never_discovered_on_a_pinned_server_is_not_called_approved(
    era: str, pins: Path
) -> None:
    """The server lists the approved catalog but serves a hidden tool too; the agent calls it.
    Nobody approved ``hidden_exfiltrate``: the call span must not say ``approved``."""
    server = Mutable()
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            await client.list_tools()
            await client.call_tool("hidden_exfiltrate", {})
    [call] = spans(t, "tools/call hidden_exfiltrate")
    print("hidden:", v(call))
    assert call.get(A.CALL_APPROVAL) != "approved", v(call)


async def test_a_removed_tool_then_called_is_not_called_approved(era: str, pins: Path) -> None:
    server = Mutable()
    server.served = tools("removed")  # lookup no longer listed (its definition is unknown)
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            await client.list_tools()
            await client.call_tool("lookup", {"q": "w"})
    [call] = spans(t, "tools/call lookup")
    print("removed:", v(call))
    assert call.get(A.CALL_APPROVAL) != "approved", v(call)


async def test_an_incomplete_poisoned_rediscovery_does_not_leave_the_call_green(
    era: str, pins: Path
) -> None:
    """Approved first; then the server poisons read_file and paginates with a cursor loop. The
    agent reads page after page (what the model sees is poisoned), the traversal never
    completes, and the call of read_file must not read approved-and-green."""
    server = Mutable()
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            await client.list_tools()
            server.served, server.pages, server.loop = tools("description"), 3, True
            cursor, seen = None, set()
            for _ in range(5):
                page = await client.list_tools(cursor=cursor)
                cursor = page.next_cursor
                if cursor is None or cursor in seen:
                    break
                seen.add(cursor)
            await client.call_tool("read_file", {"path": "x"})
    [call] = spans(t, "tools/call read_file")
    print("incomplete:", v(call), call.get(A.CATALOG_VERDICT))
    assert not (call.get(A.CALL_APPROVAL) == "approved" and call.get(A.VERDICT) in GREEN), v(call)
    assert call.get(A.CALL_APPROVAL) == "unapproved", v(call)  # the model read the poison


async def test_first_page_only_of_a_poisoned_catalog(era: str, pins: Path) -> None:
    """The agent reads only the first page (many frameworks do) of a poisoned 2-page catalog."""
    server = Mutable()
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            await client.list_tools()
            server.served, server.pages = tools("description"), 3
            await client.list_tools()
            await client.call_tool("read_file", {"path": "x"})
    [call] = spans(t, "tools/call read_file")
    print("first-page:", v(call), call.get(A.CATALOG_VERDICT))
    assert not (call.get(A.CALL_APPROVAL) == "approved" and call.get(A.VERDICT) in GREEN), v(call)
    assert call.get(A.CALL_APPROVAL) == "unapproved", v(call)  # the model read the poison


async def test_no_discovery_on_a_pinned_server_is_not_green(era: str, pins: Path) -> None:
    server = Mutable()
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            await client.call_tool("read_file", {"path": "x"})
    [call] = spans(t, "tools/call read_file")
    print("no-discovery:", v(call))
    assert call.get(A.VERDICT) not in GREEN


async def test_rediscovery_back_to_the_approved_catalog_approves_again(
    era: str, pins: Path
) -> None:
    server = Mutable()
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            server.served = tools("description")
            await client.list_tools()
            await client.call_tool("read_file", {"path": "x"})
            server.served = base_tools()
            await client.list_tools()
            await client.call_tool("read_file", {"path": "x"})
    first, second = spans(t, "tools/call read_file")
    print("flip:", v(first), v(second), [d[A.CATALOG_APPROVAL] for d in discoveries(t)])
    assert (first[A.CALL_APPROVAL], second[A.CALL_APPROVAL]) == ("unapproved", "approved")


async def test_two_sessions_different_catalogs_fresh_session_inherits_the_last(
    era: str, pins: Path
) -> None:
    """A server restart (or a load balancer) serves session A the approved catalog and
    session B a poisoned one; session C (fresh, per-call) inherits the *last* discovery."""
    server = Mutable()
    built = server.build()  # one server identity, several sessions
    with instrumented(pins) as t:
        async with Client(built, mode=era) as a:
            await a.list_tools()
            server.served = tools("description")
            async with Client(built, mode=era) as b:
                await b.list_tools()
                await a.call_tool("read_file", {"path": "x"})  # A's own: approved
                await b.call_tool("read_file", {"path": "x"})
            async with Client(built, mode=era) as c:
                await c.call_tool("read_file", {"path": "x"})
    got = [v(c) for c in spans(t, "tools/call read_file")]
    print("sessions:", got)
    assert [g[0] for g in got] == ["approved", "unapproved", "unapproved"]


async def test_our_judge_raising_leaves_the_host_alone_and_fails_closed(
    era: str, pins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from otel_mcp_health.instrumentation import _approval

    def boom(*a: Any, **k: Any) -> Any:
        raise RuntimeError("judge exploded")

    monkeypatch.setattr(_approval, "judge_approval", boom)
    server = Mutable()
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            listed = await client.list_tools()
            result = await client.call_tool("read_file", {"path": "x"})
    assert [x.name for x in listed.tools] == [x.name for x in base_tools()]
    assert result.content[0].text == "ok"  # type: ignore[union-attr]
    [d] = discoveries(t)
    [call] = spans(t, "tools/call read_file")
    print("judge-raises:", d[A.CATALOG_APPROVAL], v(call))
    assert d[A.CATALOG_APPROVAL] == "drifted"
    assert call[A.CALL_APPROVAL] == "unapproved"


async def test_the_wrapper_itself_raising_leaves_the_host_alone(
    era: str, pins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from otel_mcp_health.instrumentation import _approval

    def boom(*a: Any, **k: Any) -> Any:
        raise RuntimeError("judge exploded")

    monkeypatch.setattr(_approval, "judge", boom)
    server = Mutable()
    with instrumented(pins) as t:
        async with Client(server.build(), mode=era) as client:
            listed = await client.list_tools()
            result = await client.call_tool("read_file", {"path": "x"})
    assert len(listed.tools) == 3
    assert result.content[0].text == "ok"
    [call] = spans(t, "tools/call read_file")
    print("wrapper-raises:", v(call), call.get(A.EVIDENCE_MISSING))
    assert call.get(A.VERDICT) not in GREEN, v(call)  # missing evidence is never green


async def test_capture_warnings_does_not_export_the_pin_path(era: str, tmp_path: Path) -> None:
    """An application that turned on logging.captureWarnings(True) (common in Django, Airflow,
    many services) routes every Python warning to the 'py.warnings' logger, whose records an
    OTLP LoggingHandler on the root exports."""
    folder = tmp_path / CANARY_PIN_PATH
    folder.mkdir()
    corrupt = folder / "approved.toml"
    corrupt.write_text("[[server\n", encoding="utf-8")
    logging.captureWarnings(True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            with instrumented(corrupt) as t:
                async with Client(Mutable().build(), mode=era) as client:
                    await client.list_tools()
                exported = t.exported()
    finally:
        logging.captureWarnings(False)
    assert CANARY_PIN_PATH not in exported


async def test_a_tenant_query_and_path_never_leave_the_process(era: str, pins: Path) -> None:
    from tests.integration.approval_servers import build
    from tests.integration.mcp_health_servers import serve_http

    canary = "canary-tenant-q-5d1e"
    with instrumented(pins) as t:
        async with serve_http(build("description", "rt-mutable")) as base:  # noqa: SIM117 - the URL needs base
            async with Client(f"{base}/mcp?tenant={canary}", mode=era) as client:
                await client.list_tools()
                await client.call_tool("read_file", {"path": "x"})
        exported = t.exported()
    [call] = spans(t, "tools/call read_file")
    assert call[A.CALL_APPROVAL] == "unapproved"
    assert canary not in exported
