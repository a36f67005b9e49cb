"""``otel-mcp-health demo``: the instrumented MCP client against real MCP servers, with verdicts.

The demo is the product doing its main job, end to end, in one process and in a few seconds:

1. It builds the pipeline a production service would build: a ``TracerProvider`` whose span
   processor is :class:`~otel_mcp_health.McpHealthSpanProcessor` wrapping the exporting processor
   (here an in-memory exporter the demo reads back; with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set, an
   OTLP/HTTP exporter too, so the same spans reach your collector), plus a ``MeterProvider``.
2. It instruments the real ``mcp`` client with :class:`~otel_mcp_health.McpHealthInstrumentor`,
   chooses outcome verifiers *before* calling (:func:`~otel_mcp_health.file_digest` for the tools
   that write a file) and declares ``search`` as needing no receipt
   (:func:`~otel_mcp_health.outcome_not_required`).
3. It runs labelled scenarios against the demo's own MCP server (:mod:`._server`) over streamable
   HTTP on 127.0.0.1 (uvicorn, ephemeral port, same process), in-process and over a stdio
   subprocess: a verified export, a false success, a tool error, a malformed call, a read-only
   lookup, a call nobody can verify, a timeout after a write and its reconciliation, an unknown
   tool, a catalog change signalled and then re-discovered, a 401 at the handshake and a refused
   connection. Only 127.0.0.1 is ever contacted (plus your OTLP endpoint if you set one).
4. It prints one row per exported span that carries ``mcp_health.verdict``, the catalog verdicts,
   the two call rates (docs/model.md#two-rates) and the incidents opened, and checks every
   scenario against the verdict it must get.

Exit codes: ``0`` every scenario got its expected verdict; ``1`` a mismatch (printed loudly);
``2`` a setup error, e.g. the MCP SDK is not installed
(``pip install 'otel-mcp-health[instruments]'``).

This module imports nothing optional: the CLI stays usable without the ``mcp`` package.
"""

from __future__ import annotations

import sys
from typing import TextIO

from otel_mcp_health.clientside.command_line import SdkMissingError, sdk_required

#: Exit code of a setup error (mirrors ``otel_mcp_health.demo._run.EXIT_SETUP_ERROR``).
_EXIT_SETUP_ERROR = 2
#: Top-level modules the demo needs beyond the package's own dependencies (all come with ``mcp``).
_OPTIONAL = frozenset({"mcp", "mcp_types", "uvicorn", "starlette", "anyio", "httpx2"})


def main(out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the demo; returns its exit code (see the module docstring)."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        with sdk_required("demo", err, _OPTIONAL):
            from otel_mcp_health.demo._run import run
    except SdkMissingError:
        return _EXIT_SETUP_ERROR
    return run(out, err)
