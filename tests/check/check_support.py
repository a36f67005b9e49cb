"""Helpers of the ``check`` suite: run the CLI in this process, name our stdio servers."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_mcp_health.cli import main

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "check_servers.py"
EVERYTHING = (
    HERE
    / "servers"
    / "node_modules"
    / "@modelcontextprotocol"
    / "server-everything"
    / "dist"
    / "index.js"
)
PROVISION = "run `make provision-check` (scripts/provision-check.sh) first"


@dataclass(frozen=True)
class Checked:
    """One ``otel-mcp-health check`` run: exit code, standard output and error."""

    code: int
    out: str
    err: str

    def json(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.out)
        return value


def check(*argv: str) -> Checked:
    """Run ``otel-mcp-health check ARGV`` in this process (the real CLI entry point)."""
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", *argv], out=out, err=err)
    return Checked(code, out.getvalue(), err.getvalue())


def stdio(variant: str) -> list[str]:
    """The command line of one of our stdio servers."""
    return ["--", sys.executable, str(SERVERS), "stdio", variant]
