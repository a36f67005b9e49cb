"""``otel-mcp-health check``: judge any MCP server on demand, with the processor's own verdicts.

One engine, not a second implementation: the check builds the pipeline an instrumented agent
has (:class:`~otel_mcp_health.McpHealthInstrumentor` on a ``TracerProvider`` whose span processor
is :class:`~otel_mcp_health.McpHealthSpanProcessor`), drives the real ``mcp`` client against the
server (handshake in either era with the fallback, a complete discovery with cursor-chain
checks, an optional ``--watch`` for ``list_changed``, an optional ``--call``) and reads the
verdicts back from the judged spans. See docs/check.md.

Exit codes: ``0`` healthy (with a call) or converged (without one), ``1`` any other verdict or a
catalog that drifted from its approved catalog (``--pins``), ``2`` a usage error (a ``--pins``
file that cannot be opened) or a missing MCP SDK. This module imports nothing optional.
"""

from __future__ import annotations

import argparse
import json
import warnings
from typing import TextIO

from otel_mcp_health import OutcomePolicy
from otel_mcp_health.clientside.command_line import (
    CHECK_MAX_PAGES,
    DEFAULT_TIMEOUT_S,
    ERA_MODES,
    CheckOptions,
    SdkMissingError,
    UsageError,
    not_required,
    parse_arguments,
    parse_file_verifier,
    parse_headers,
    parse_http_verifier,
    parse_outcomes,
    parse_pins_option,
    positive,
    sdk_required,
)

EXIT_USAGE = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``check`` subcommand's options (documented in docs/check.md), in their help order."""
    _add_server_options(parser)
    _add_call_options(parser)
    _add_run_options(parser)


def _add_server_options(parser: argparse.ArgumentParser) -> None:
    """Where the server is, how to reach it, and how long to watch its catalog."""
    parser.add_argument("--url", help="streamable HTTP endpoint, e.g. https://host/mcp")
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="HTTP header sent with every request (used, never printed or exported)",
    )
    parser.add_argument(
        "--era", choices=tuple(ERA_MODES), default="auto", help="handshake era (default auto)"
    )
    parser.add_argument(
        "--watch",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="wait this long for list_changed and list the tools again when one arrives",
    )


def _add_call_options(parser: argparse.ArgumentParser) -> None:
    """The optional call after discovery, and how its outcome is verified."""
    parser.add_argument("--call", metavar="TOOL", help="call this tool after discovery")
    parser.add_argument("--args", metavar="JSON", help="the call's arguments, a JSON object")
    verify = parser.add_mutually_exclusive_group()
    verify.add_argument(
        "--verify-file", metavar="PATH[:SHA256]", help="the call must leave this file"
    )
    verify.add_argument(
        "--verify-http", metavar="URL", help="after the call, GET URL must answer --verify-status"
    )
    verify.add_argument(
        "--outcome-not-required",
        action="store_true",
        help="the tool has no effect to verify (e.g. a read-only lookup)",
    )
    verify.add_argument(
        "--outcomes",
        metavar="FILE",
        help="choose the call's verifier from this outcome policy (docs/outcomes.md)",
    )
    parser.add_argument(
        "--verify-status",
        type=int,
        metavar="STATUS",
        help="with --verify-http: the status the GET must answer (default 200)",
    )


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """Bounds, output and export; the stdio server's command line comes last."""
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"bound of the whole check (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--max-pages",
        type=int,
        default=CHECK_MAX_PAGES,
        metavar="N",
        help=f"page cap of one discovery (default {CHECK_MAX_PAGES})",
    )
    parser.add_argument(
        "--pins",
        metavar="FILE",
        help="judge the tools against this approved catalog (otel-mcp-health pin; default: "
        "OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG); drift exits 1",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--otlp", action="store_true", help="also export the spans (OTEL_EXPORTER_OTLP_*)"
    )
    parser.add_argument(
        "command", nargs="*", metavar="-- COMMAND ARGS", help="start a stdio server"
    )


def _outcomes(args: argparse.Namespace) -> OutcomePolicy | None:
    """The call's outcome policy: ``--outcomes FILE``, or the one entry a shorthand builds."""
    if args.outcomes is not None:
        return parse_outcomes(args.outcomes)
    if args.call is None:
        return None
    if args.verify_file is not None:
        return parse_file_verifier(args.call, args.verify_file)
    if args.verify_http is not None:
        return parse_http_verifier(args.call, args.verify_http, args.verify_status)
    return not_required(args.call) if args.outcome_not_required else None


def _verifier_given(args: argparse.Namespace) -> bool:
    chosen = (args.verify_file, args.verify_http, args.outcomes)
    return args.outcome_not_required or any(value is not None for value in chosen)


def options_from(args: argparse.Namespace) -> CheckOptions:
    """Validate the command line (raises :class:`UsageError`)."""
    if (args.url is None) == (not args.command):
        raise UsageError("give either --url URL or -- COMMAND ARGS (a stdio server), not both")
    if args.header and args.url is None:
        raise UsageError("--header applies to --url only")
    if args.call is None and (args.args is not None or _verifier_given(args)):
        raise UsageError("--args and the verifier options need --call TOOL")
    if args.verify_status is not None and args.verify_http is None:
        raise UsageError("--verify-status applies to --verify-http only")
    if args.max_pages < 1:
        raise UsageError("--max-pages expects a positive number of pages")
    if args.watch < 0 or args.watch != args.watch:
        raise UsageError("--watch expects a number of seconds (0 = do not watch)")
    return CheckOptions(
        url=args.url,
        command=tuple(args.command),
        headers=parse_headers(args.header),
        era=args.era,
        watch_s=args.watch,
        call=args.call,
        arguments=parse_arguments(args.args),
        outcomes=_outcomes(args),
        timeout_s=positive("--timeout", args.timeout),
        max_pages=args.max_pages,
        otlp=args.otlp,
        pins=parse_pins_option(args.pins),
    )


def _progress(err: TextIO) -> _ProgressLine:
    return _ProgressLine(err, enabled=bool(getattr(err, "isatty", lambda: False)()))


class _ProgressLine:
    """One line on stderr, rewritten in place, only when stderr is a terminal."""

    def __init__(self, err: TextIO, *, enabled: bool) -> None:
        self._err = err
        self._enabled = enabled
        self._width = 0

    def __call__(self, step: str) -> None:
        if self._enabled:
            text = f"otel-mcp-health check: {step}"
            self._err.write("\r" + text.ljust(self._width))
            self._err.flush()
            self._width = len(text)

    def clear(self) -> None:
        if self._enabled and self._width:
            self._err.write("\r" + " " * self._width + "\r")
            self._err.flush()


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run one check; returns the exit code."""
    try:
        options = options_from(args)
    except UsageError as exc:
        err.write(f"otel-mcp-health check: {exc}\n")
        return EXIT_USAGE
    try:
        with sdk_required("check", err):
            from otel_mcp_health.check import _words
            from otel_mcp_health.clientside import driver, pipeline, span_report
    except SdkMissingError:
        return EXIT_USAGE
    progress = _progress(err)
    built = pipeline.build(otlp=options.otlp, service_name=pipeline.SERVICE_NAME)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        with pipeline.instrumented(built, approved_catalog=options.pins) as instrumented:
            facts = driver.drive(options, progress)
            report = span_report.build(instrumented.spans(), facts, options)
    progress.clear()
    for warning in warned:  # ours (a pin file that cannot be parsed fails closed) go to err
        if str(warning.message).startswith("mcp_health:"):
            err.write(f"otel-mcp-health check: {warning.message}\n")
        else:
            warnings.showwarning(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    out.write(json.dumps(report) + "\n" if args.json else _words.render(report))
    return span_report.exit_code(report)
