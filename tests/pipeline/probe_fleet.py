"""The servers a probe meets in the pipeline tests, and the prober as its own process.

Real MCP servers on 127.0.0.1, each its own process, reused from the other suites:

* ``tests/check/check_servers.py stdio healthy`` (stdio; a read-only ``lookup`` and a ``fail``
  tool answering ``isError``), spawned by the prober itself at every probe;
* ``tests/check/check_servers.py http`` (streamable HTTP): ``/secure``, the healthy server behind a
  bearer token (401 without it);
* ``tests/integration/changing_server.py http`` (streamable HTTP): ``/mcp``, ``/authn`` answering
  401 with a ``WWW-Authenticate`` challenge, and ``trigger_change``, which adds a tool to the
  catalog of every later session;
* ``tests/integration/gateway_http.py`` (SSE): ``/sse`` and ``/sse-authn`` (401 with a
  challenge);
* a closed port.

The prober runs as ``otel-mcp-health probe --config FILE --listen 127.0.0.1:0``, the way an
operator runs it; its one start-up line names its URL.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from tests.pipeline.pipeline_stack import ROOT, free_port, stop

CHECK_SERVERS = ROOT / "tests" / "check" / "check_servers.py"
CHANGING_SERVER = ROOT / "tests" / "integration" / "changing_server.py"
GATEWAY = ROOT / "tests" / "integration" / "gateway_http.py"
START_TIMEOUT_S = 30.0
#: The bearer token the prober sends to the 401 target: by reference, and never to be seen again.
TOKEN_CANARY = "canary-probe-token-4be1c9"
TOKEN_VARIABLE = "PROBE_E2E_TOKEN"
#: The variable holding the token ``/secure`` accepts (check_servers.TOKEN): the probe converges
#: only if the token was sent.
SECURE_TOKEN_VARIABLE = "PROBE_E2E_SECURE_TOKEN"
#: The gateway's path secret (it serves a server under /k/SECRET/mcp; never probed here).
GATEWAY_SECRET = "canary-probe-gateway-93d0e5"


def _first_line(process: subprocess.Popen[str], what: str, log: Path) -> str:
    """The first stdout line of a server that prints its URL once it listens."""
    assert process.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    line = ""
    while time.monotonic() < deadline and not line:
        line = process.stdout.readline().strip()
        if not line and process.poll() is not None:
            break
    if not line:
        msg = f"{what} printed no URL within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}"
        raise RuntimeError(msg)
    return line


@contextmanager
def url_server(argv: Sequence[str], log: Path, what: str) -> Iterator[str]:
    """A server process that prints its base URL on its first stdout line; stopped by its PID."""
    with log.open("w") as err:
        process = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT
        )
    try:
        yield _first_line(process, what, log)
    finally:
        stop(process)  # type: ignore[arg-type]  # stop() signals and waits: any Popen


@dataclass(frozen=True)
class Fleet:
    """Base URLs of the running servers, and a port nothing listens on."""

    stable_http: str
    check_http: str
    drifting_http: str
    gateway: str
    closed_port: int


@contextmanager
def fleet(workdir: Path) -> Iterator[Fleet]:
    python = sys.executable
    with (
        url_server([python, str(CHANGING_SERVER), "http"], workdir / "stable.log", "stable") as a,
        url_server([python, str(CHANGING_SERVER), "http"], workdir / "drift.log", "drifting") as b,
        url_server([python, str(GATEWAY), GATEWAY_SECRET], workdir / "gateway.log", "gateway") as c,
        url_server([python, str(CHECK_SERVERS), "http"], workdir / "check.log", "check") as d,
    ):
        yield Fleet(
            stable_http=a, check_http=d, drifting_http=b, gateway=c, closed_port=free_port()
        )


def stdio_command(variant: str = "healthy") -> list[str]:
    return [sys.executable, str(CHECK_SERVERS), "stdio", variant]


# ---- the probe's configuration (TOML written by hand: the file an operator writes) ----------
def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return "[" + ", ".join(_toml_value(v) for v in value) + "]"


def probe_config(
    probe: Mapping[str, Any], modules: Mapping[str, Mapping[str, Any]], targets: Sequence[Any]
) -> str:
    """A probe configuration file: ``[probe]``, ``[module.NAME]`` and ``[[target]]`` tables
    (a target's ``headers`` and ``canary`` become its sub-tables)."""
    lines = ["[probe]", *(f"{k} = {_toml_value(v)}" for k, v in probe.items()), ""]
    for name, module in modules.items():
        lines += [f"[module.{name}]", *(f"{k} = {_toml_value(v)}" for k, v in module.items()), ""]
    for target in targets:
        plain = {k: v for k, v in target.items() if k not in ("headers", "canary")}
        lines += ["[[target]]", *(f"{k} = {_toml_value(v)}" for k, v in plain.items())]
        for table in ("headers", "canary"):
            if table in target:
                lines.append(f"[target.{table}]")
                lines += [f"{k} = {_toml_value(v)}" for k, v in target[table].items()]
        lines.append("")
    return "\n".join(lines)


@dataclass(frozen=True)
class Prober:
    """A running prober: its base URL and its log (stdout and stderr)."""

    url: str
    address: str
    log: Path


@contextmanager
def prober(
    config: Path, log: Path, *, schedule: bool = False, env: Mapping[str, str] | None = None
) -> Iterator[Prober]:
    """``otel-mcp-health probe --config CONFIG --listen 127.0.0.1:0 [--schedule]``."""
    cli = Path(sys.executable).with_name("otel-mcp-health")
    argv = [str(cli), "probe", "--config", str(config), "--listen", "127.0.0.1:0"]
    argv += ["--schedule"] if schedule else []
    with log.open("w") as err:
        process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
    try:
        line = _first_line(process, "the prober", log)
        found = re.fullmatch(
            r"otel-mcp-health probe: listening on (http://(127\.0\.0\.1:\d+))", line
        )
        assert found, line
        yield Prober(url=found[1], address=found[2], log=log)
    finally:
        stop(process)  # type: ignore[arg-type]
        assert process.stdout is not None
        with log.open("a") as out:
            out.write(process.stdout.read())


# ---- pins and catalog changes, through the real client ---------------------------------------
async def _tools(url: str) -> list[dict[str, Any]]:
    from mcp import Client

    async with Client(url, mode="legacy") as client:
        listed = await client.list_tools()
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools]


def pins_of(url: str, port: int) -> str:
    """A pin file (issue 28's format) approving the catalog the server at ``url`` lists now, for
    any server name on 127.0.0.1 at ``port``."""
    from otel_mcp_health.core.pins import PinFile, pin_server, render_pins

    tools = anyio.run(_tools, url)
    server = pin_server(tools, name="*", address="127.0.0.1", port=str(port), source="live")
    rendered: str = render_pins(PinFile(servers=(server,)))
    return rendered


async def _call(url: str, tool: str) -> None:
    from mcp import Client

    async with Client(url, mode="legacy") as client:
        await client.call_tool(tool, {})


def change_catalog(url: str) -> None:
    """Adds a tool to the server's catalog (``trigger_change``), through a real client session."""
    anyio.run(_call, url, "trigger_change")
