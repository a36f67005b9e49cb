"""``otel-mcp-health probe``: the check as a service, for every MCP server an organisation uses.

One process, two ways to use it (docs/probe.md):

* blackbox-compatible: ``/probe?target=NAME&module=MODULE`` runs one probe of a *configured*
  target and answers Prometheus text; ``/metrics`` has the prober's own metrics;
* scheduled (``--schedule``): every target on its interval, exported over OTLP (one trace per
  probe whose spans are the product's own judged spans, and metrics).

A probe is ``otel-mcp-health check``'s driver on the product's own instrumentation and processor,
so its verdicts are the agent side's. Exit codes: ``0`` stopped cleanly, ``2`` a bad configuration
or a missing MCP SDK. This module imports nothing optional.
"""

from __future__ import annotations

import argparse
import signal
import threading
from typing import TextIO

from otel_mcp_health.probe._config import ProbeConfig, ProbeConfigError, load_config

__all__ = ["ProbeConfig", "ProbeConfigError", "add_arguments", "load_config", "run"]

EXIT_USAGE = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``probe`` subcommand's options (docs/probe.md)."""
    parser.add_argument("--config", required=True, metavar="FILE", help="modules and targets")
    parser.add_argument(
        "--listen", metavar="HOST:PORT", help="bind here (default [probe].listen, 127.0.0.1:9469)"
    )
    parser.add_argument(
        "--schedule",
        action="store_true",
        help="also probe every target on its interval and export over OTLP (OTEL_EXPORTER_OTLP_*)",
    )


def _listen(raw: str) -> tuple[str, int] | None:
    host, sep, port = raw.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        return None
    return host.strip("[]"), int(port)


def run(
    args: argparse.Namespace, out: TextIO, err: TextIO, stop: threading.Event | None = None
) -> int:
    """Serve until ``stop`` is set (or SIGTERM/SIGINT on the main thread); the exit code."""
    try:
        config = load_config(args.config)
    except ProbeConfigError as exc:
        err.writelines(f"otel-mcp-health probe: {exc.source}: {p}\n" for p in exc.problems)
        return EXIT_USAGE
    listen = _listen(args.listen or config.listen)
    if listen is None:
        err.write("otel-mcp-health probe: --listen expects HOST:PORT\n")
        return EXIT_USAGE
    from otel_mcp_health.clientside.command_line import SdkMissingError, sdk_required

    try:
        with sdk_required("probe", err):
            from otel_mcp_health.probe import _serve
    except SdkMissingError:
        return EXIT_USAGE
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
    return _serve.serve(config, listen, schedule=args.schedule, out=out, err=err, stop=stop)
