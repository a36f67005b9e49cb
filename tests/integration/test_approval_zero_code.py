"""Approved catalogs at run time, zero-code (issue 28; docs/model.md#approval).

The agent (``approval_agent.py``) has no telemetry code. It runs in a real subprocess under
``opentelemetry-instrument`` (``OTEL_PYTHON_CONFIGURATOR=mcp_health``) with
``OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG`` naming a pin file written from the catalog a
person reviewed (listed by the real client), against real MCP servers whose catalog changed since
(``approval_servers.py``), and exports OTLP/HTTP to a receiver on 127.0.0.1 that decodes the real
protobuf payloads (the harness of ``tests/processor/test_zero_code.py``). Each change must read its
classified approval on the span that completes the discovery, and the next call the verdict that
follows from it; a corrupt pin file fails closed with one warning and leaves the agent's results
alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from tests.integration.approval_servers import (
    ADDED_TOOL,
    CANARY_PIN_PATH,
    CHANGES,
    build,
    server_name,
    wire,
)
from tests.outcomes.test_zero_code_policy import _receiver
from tests.processor.test_zero_code import INSTRUMENT
from tests.support.served import served

from otel_mcp_health import attributes as A
from otel_mcp_health.core.pins import PinFile, pin_server, render_pins

ROOT = Path(__file__).resolve().parents[2]
AGENT = "tests.integration.approval_agent"
#: The call verdict of a tool whose approval is not in question (no outcome verifier here).
PLAIN = ("unverified", "no_outcome_verifier", "add_outcome_verifier")
STALE = ("stale_catalog", "tool_unapproved", "review_catalog_change")
UNREADABLE = ("stale_catalog", "pins_unreadable", "review_catalog_change")
ERAS = ["legacy", "auto"]


@dataclass
class Run:
    """One run of the agent: exit code, what it printed, its stderr, the exported spans."""

    returncode: int
    stdout: str
    stderr: str
    spans: list[tuple[str, dict[str, Any]]]

    def discoveries(self, server: str) -> list[dict[str, Any]]:
        """The spans that completed a discovery of ``server`` (they carry the catalog size)."""
        return [
            a
            for name, a in self.spans
            if name == "tools/list" and A.CATALOG_TOOL_COUNT in a and a.get(A.SERVER_NAME) == server
        ]

    def discovery(self, server: str) -> dict[str, Any]:
        [found] = self.discoveries(server)
        return found

    def calls(self, tool: str, server: str | None = None) -> list[dict[str, Any]]:
        """The client's ``tools/call`` spans (the in-process server's own spans have no
        session key)."""
        return [
            a
            for name, a in self.spans
            if name == f"tools/call {tool}"
            and A.SESSION_KEY in a
            and (server is None or a.get(A.SERVER_NAME) == server)
        ]

    def call(self, tool: str, server: str | None = None) -> dict[str, Any]:
        [found] = self.calls(tool, server)
        return found


def verdict(attrs: dict[str, Any]) -> tuple[Any, ...]:
    return attrs.get(A.VERDICT), attrs.get(A.REASON), attrs.get(A.NEXT_ACTION)


def approval(attrs: dict[str, Any]) -> tuple[Any, ...]:
    """Verdict, reason and counts (material, cosmetic, added, removed) of a discovery."""
    counts = (
        A.CATALOG_APPROVAL_MATERIAL_COUNT,
        A.CATALOG_APPROVAL_COSMETIC_COUNT,
        A.CATALOG_APPROVAL_ADDED_COUNT,
        A.CATALOG_APPROVAL_REMOVED_COUNT,
    )
    return (
        attrs.get(A.CATALOG_APPROVAL),
        attrs.get(A.CATALOG_APPROVAL_REASON),
        *(attrs.get(key) for key in counts),
    )


def run_agent(pins: Path | None, *argv: str) -> Run:
    """Run the agent zero-code, with ``pins`` as its approved catalog (``None``: none)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    if pins is not None:
        env["OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG"] = str(pins)
    with _receiver() as (endpoint, received):
        env.update(
            OTEL_PYTHON_CONFIGURATOR="mcp_health",
            OTEL_SERVICE_NAME="zero-code-approval-agent",
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_METRICS_EXPORTER="none",
            OTEL_LOGS_EXPORTER="none",
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        )
        done = subprocess.run(
            [str(INSTRUMENT), sys.executable, "-m", AGENT, *argv],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        with received.lock:
            spans = list(received.spans)
    return Run(done.returncode, done.stdout, done.stderr, spans)


async def _listed(change: str) -> list[dict[str, Any]]:
    async with Client(build(change), mode="legacy") as client:
        return wire((await client.list_tools()).tools)


def reviewed(change: str = "unchanged") -> list[dict[str, Any]]:
    """The catalog a person reviewed, as the real client lists it."""
    return anyio.run(_listed, change)


def write_pins(directory: Path, servers: list[Any]) -> Path:
    """A pin file under a directory whose name is a canary (the path must never be exported)."""
    folder = directory / CANARY_PIN_PATH
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "approved.toml"
    path.write_text(render_pins(PinFile(tuple(servers))), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def pins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Pins of the reviewed catalog for every server of :data:`CHANGES` (not the unpinned one)."""
    tools = reviewed()
    servers = [pin_server(tools, name=server_name(change), source="live") for change in CHANGES]
    return write_pins(tmp_path_factory.mktemp("pins"), servers)


@pytest.fixture(scope="module", params=ERAS)
def changed(request: pytest.FixtureRequest, pins: Path) -> Run:
    run = run_agent(pins, "changes", request.param)
    assert run.returncode == 0, run.stderr
    versions = {
        a.get(A.MCP_PROTOCOL_VERSION)
        for name, a in run.spans
        if A.SESSION_KEY in a and name.startswith(("tools/list", "tools/call"))
    }
    assert (versions == {"2026-07-28"}) == (request.param == "auto"), versions
    return run


def test_a_description_change_is_material_and_its_tool_unapproved(changed: Run) -> None:
    found = changed.discovery("approval-description")
    assert approval(found) == ("drifted", "material_change", 1, 0, 0, 0)
    assert found[A.CATALOG_APPROVAL_MATERIAL_TOOLS] == ["read_file"]
    assert found[A.CATALOG_APPROVAL_CHANGED_MEMBERS] == ["description"]
    call = changed.call("read_file", "approval-description")
    assert verdict(call) == STALE
    assert call[A.CALL_APPROVAL] == "unapproved"
    assert call[A.CATALOG_VERDICT] == "converged"  # approval is its own axis
    other = changed.call("create_ticket", "approval-description")
    assert (other[A.CALL_APPROVAL], verdict(other)) == ("approved", PLAIN)


def test_an_optional_argument_added_is_material(changed: Run) -> None:
    found = changed.discovery("approval-schema")
    assert approval(found) == ("drifted", "material_change", 1, 0, 0, 0)
    assert found[A.CATALOG_APPROVAL_MATERIAL_TOOLS] == ["read_file"]
    assert found[A.CATALOG_APPROVAL_CHANGED_MEMBERS] == ["inputSchema"]
    assert verdict(changed.call("read_file", "approval-schema")) == STALE


def test_a_title_alone_is_cosmetic_and_stays_approved(changed: Run) -> None:
    found = changed.discovery("approval-title")
    assert approval(found) == ("approved", None, 0, 1, 0, 0)
    assert found[A.CATALOG_APPROVAL_COSMETIC_TOOLS] == ["read_file"]
    call = changed.call("read_file", "approval-title")
    assert (call[A.CALL_APPROVAL], verdict(call)) == ("approved", PLAIN)


def test_an_added_tool_drifts_and_only_it_is_unapproved(changed: Run) -> None:
    found = changed.discovery("approval-added")
    assert approval(found) == ("drifted", "tool_added", 0, 0, 1, 0)
    assert found[A.CATALOG_APPROVAL_ADDED_TOOLS] == [ADDED_TOOL]
    assert verdict(changed.call(ADDED_TOOL, "approval-added")) == STALE
    old = changed.call("create_ticket", "approval-added")
    assert (old[A.CALL_APPROVAL], verdict(old)) == ("approved", PLAIN)


def test_a_removed_tool_stays_approved(changed: Run) -> None:
    found = changed.discovery("approval-removed")
    assert approval(found) == ("approved", None, 0, 0, 0, 1)
    assert found[A.CATALOG_APPROVAL_REMOVED_TOOLS] == ["lookup"]
    assert verdict(changed.call("create_ticket", "approval-removed")) == PLAIN


def test_the_reviewed_catalog_is_approved(changed: Run) -> None:
    found = changed.discovery("approval-unchanged")
    assert approval(found) == ("approved", None, 0, 0, 0, 0)
    assert A.CATALOG_APPROVAL_CHANGED_MEMBERS not in found
    assert verdict(changed.call("read_file", "approval-unchanged")) == PLAIN


def test_a_server_no_pins_cover_is_unpinned_and_its_calls_unaffected(changed: Run) -> None:
    found = changed.discovery("approval-unpinned")
    assert approval(found) == ("unpinned", "no_matching_pins", 0, 0, 0, 0)
    call = changed.call("read_file", "approval-unpinned")
    assert (call[A.CALL_APPROVAL], verdict(call)) == ("unpinned", PLAIN)


def test_no_pin_file_path_leaves_the_agent(changed: Run) -> None:
    assert CANARY_PIN_PATH not in repr(changed.spans)


# ----------------------------------------------------------------------------------------------
# A pin file that cannot be read: fail closed, one warning, the application unaffected
# ----------------------------------------------------------------------------------------------
def test_a_corrupt_pin_file_fails_closed_and_the_agent_sees_the_same(tmp_path: Path) -> None:
    folder = tmp_path / CANARY_PIN_PATH
    folder.mkdir()
    corrupt = folder / "approved.toml"
    corrupt.write_text('format = "otel-mcp-health/pins/1"\n[[server]\nname = ', encoding="utf-8")
    without = run_agent(None, "changes", "legacy")
    broken = run_agent(corrupt, "changes", "legacy")
    assert broken.returncode == without.returncode == 0, broken.stderr
    assert broken.stdout == without.stdout  # the same results, the same exceptions
    warnings = [line for line in broken.stderr.splitlines() if "approved catalog" in line]
    assert len(warnings) == 1, broken.stderr
    assert str(corrupt) in warnings[0]
    for change in (*CHANGES, "unpinned"):
        assert approval(broken.discovery(server_name(change)))[:2] == ("drifted", "pins_unreadable")
    calls = [a for name, a in broken.spans if name.startswith("tools/call ") and A.SESSION_KEY in a]
    assert len(calls) == 9
    assert {verdict(a) for a in calls} == {UNREADABLE}
    assert CANARY_PIN_PATH not in repr(broken.spans)
    # Without an approved catalog nothing is judged for approval.
    assert not any(A.CATALOG_APPROVAL in a or A.CALL_APPROVAL in a for _, a in without.spans)


# ----------------------------------------------------------------------------------------------
# The agent as configured
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ERAS)
def test_a_call_in_a_fresh_session_inherits_the_discoverys_approval(pins: Path, mode: str) -> None:
    run = run_agent(pins, "per_call", mode)
    assert run.returncode == 0, run.stderr
    assert approval(run.discovery("approval-description"))[:2] == ("drifted", "material_change")
    read = run.call("read_file")
    assert (verdict(read), read[A.CATALOG_INHERITED]) == (STALE, True)
    ticket = run.call("create_ticket")
    assert (ticket[A.CALL_APPROVAL], verdict(ticket)) == ("approved", PLAIN)


def test_a_tool_filter_installs_a_subset_and_approval_judges_the_discovery(pins: Path) -> None:
    run = run_agent(pins, "filter", "legacy")
    assert run.returncode == 0, run.stderr
    [install] = [a for name, a in run.spans if name == A.INSTALL_SPAN_NAME]
    assert (install[A.CATALOG_VERDICT], install[A.CATALOG_CLIENT_TOOL_COUNT]) == ("converged", 2)
    assert approval(run.discovery("approval-description"))[:2] == ("drifted", "material_change")
    assert verdict(run.call("read_file")) == STALE  # installed, converged, and still unapproved
    assert verdict(run.call("create_ticket")) == PLAIN


@contextmanager
def _http_servers(*servers: tuple[str, str]) -> Iterator[list[str]]:
    """Streamable HTTP servers (change, name), each in its own process; their base URLs."""
    module = [sys.executable, "-m", "tests.integration.approval_servers", "http"]
    with ExitStack() as stack:
        yield [stack.enter_context(served([*module, *server], cwd=ROOT)) for server in servers]


def test_two_same_named_servers_are_told_apart_by_port(tmp_path: Path) -> None:
    """Both serve ``approval-twin``: one the reviewed catalog, one a changed description, each
    pinned as reviewed on its own port. Matched by name alone, the first entry would judge both
    and the second would read drifted."""
    with _http_servers(("unchanged", "approval-twin"), ("description", "approval-twin")) as urls:
        ports = [int(url.rsplit(":", 1)[1]) for url in urls]
        entries = [
            pin_server(reviewed(change), name="approval-twin", address="127.0.0.1", port=port)
            for change, port in zip(("unchanged", "description"), ports, strict=True)
        ]
        path = write_pins(tmp_path, entries)
        run = run_agent(path, "urls", "legacy", *urls)
        first_only = run_agent(write_pins(tmp_path / "first", entries[:1]), "urls", "legacy", *urls)
    assert run.returncode == first_only.returncode == 0, run.stderr + first_only.stderr
    by_port = {a[A.SERVER_PORT]: a for a in run.discoveries("approval-twin")}
    assert {port: approval(by_port[port])[0] for port in ports} == dict.fromkeys(ports, "approved")
    assert [verdict(a) for a in run.calls("read_file")] == [PLAIN, PLAIN]
    # Only the first server's entry: the second server (its port) is not pinned.
    second = {a[A.SERVER_PORT]: a for a in first_only.discoveries("approval-twin")}[ports[1]]
    assert approval(second)[:2] == ("unpinned", "no_matching_pins")


def test_two_same_named_stdio_servers_share_one_label_and_one_entry(tmp_path: Path) -> None:
    """A stdio server has no address or port: two different ones announcing one name share a
    label, so the first matching entry judges both (docs/model.md#approval). Each keeps its own
    discovery (they are two servers), so the one that differs from the entry reads drifted."""
    entry = pin_server(reviewed(), name="approval-twin")
    run = run_agent(
        write_pins(tmp_path, [entry]),
        "stdio",
        "legacy",
        "approval-twin",
        "unchanged",
        "description",
    )
    assert run.returncode == 0, run.stderr
    found = [approval(a)[:2] for a in run.discoveries("approval-twin")]
    assert found == [("approved", None), ("drifted", "material_change")]
    assert [verdict(a) for a in run.calls("read_file")] == [PLAIN, STALE]


CHANGING = ROOT / "tests" / "integration" / "changing_server.py"


async def _listed_changing() -> list[dict[str, Any]]:
    from mcp import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[str(CHANGING), "stdio"])
    async with Client(params, mode="legacy") as client:
        return wire((await client.list_tools()).tools)


def test_a_tool_added_while_the_agent_runs_is_unapproved_from_the_next_discovery(
    tmp_path: Path,
) -> None:
    """The rug pull at run time: the pinned catalog is approved until the server adds a tool and
    announces it; the discovery after the signal reads drifted / tool_added, and a call of the new
    tool stale_catalog / tool_unapproved while an old tool's call stays as it would be."""
    entry = pin_server(anyio.run(_listed_changing), name="changing-server")
    run = run_agent(write_pins(tmp_path, [entry]), "rug_pull", "legacy", str(CHANGING))
    assert run.returncode == 0, run.stderr
    first, second = run.discoveries("changing-server")
    assert approval(first) == ("approved", None, 0, 0, 0, 0)
    assert approval(second) == ("drifted", "tool_added", 0, 0, 1, 0)
    assert second[A.CATALOG_APPROVAL_ADDED_TOOLS] == ["added_tool"]
    assert verdict(run.call("added_tool")) == STALE
    before, after = run.calls("create_ticket")
    assert (before[A.CALL_APPROVAL], after[A.CALL_APPROVAL]) == ("approved", "approved")
    assert verdict(after) == PLAIN
