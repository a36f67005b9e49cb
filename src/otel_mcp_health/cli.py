"""The ``otel-mcp-health`` command line (also ``python -m otel_mcp_health``).

Subcommands:

``classify FILE... [--json] [--summary]``
    Read evidence records (docs/evidence-format.md, JSON Lines; ``-`` for standard input) and
    print one verdict per record. ``--json`` prints JSON Lines in the documented output shapes;
    ``--summary`` adds the two call rates (docs/model.md#two-rates) over the call records.
``digest FILE [--json]``
    Digest a ``tools/list`` result (``{"tools": [...]}``, also inside a JSON-RPC response) or a
    JSON array of tools: prints the projection-v1 digest and the tool count.
``rules``
    Print the rule tables (catalog, call layers, session contract) as Markdown, generated from
    the code.
``outcomes FILE [--tool NAME [--server NAME] [--read-only]]``
    Validate an outcome policy (docs/outcomes.md) offline and print what each entry matches
    (with ``--tool``, also which entry decides for that tool). Exit codes: ``0`` valid, ``2``
    invalid (every problem is printed with its entry and key, never a value).
``probe --config FILE [--listen HOST:PORT] [--schedule]``
    Probe the configured MCP servers as a service: ``/probe?target=NAME&module=MODULE`` answers
    Prometheus text, ``/metrics`` the prober's own metrics; ``--schedule`` also probes every
    target on its interval and exports over OTLP (:mod:`otel_mcp_health.probe`, docs/probe.md).
``pin --pins FILE (--url URL | -- COMMAND | --tools-file FILE | --mcpb FILE) [--update
[--accept] | --verify]``
    Approve a server's tools by pinning their digests, show the classified changes, or verify
    them for CI (:mod:`otel_mcp_health.pin`, docs/approval.md).
``demo``
    Run the instrumented ``mcp`` client against real MCP servers on 127.0.0.1 and print the
    verdicts on the exported spans (:mod:`otel_mcp_health.demo`; needs the ``instruments``
    extra). Exit codes: ``0`` every scenario got its expected verdict, ``1`` a mismatch, ``2`` a
    setup error.

Exit codes: ``0`` every verdict is ``healthy`` or ``converged``; ``1`` any other verdict;
``2`` a usage or input error (the message says what is wrong and where). A bad line is reported
on standard error and yields no verdict; the other lines are still classified.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, TextIO, cast

from otel_mcp_health._files import INPUT_FILE_WORDS, READ_ERRORS, say_read_failure
from otel_mcp_health._pipes import QuietPipe
from otel_mcp_health.core.calls import CallResult, rates
from otel_mcp_health.core.catalog import CATALOG_RULES
from otel_mcp_health.core.contract import VERDICT_RULES
from otel_mcp_health.core.digest import DigestError, digest_tools
from otel_mcp_health.core.evidence import Record
from otel_mcp_health.core.layers import LAYER_CHECKS
from otel_mcp_health.core.records import EvidenceError, parse_lines
from otel_mcp_health.core.report import expectation_mismatches, judge
from otel_mcp_health.core.rules import render_table
from otel_mcp_health.core.vocabulary import DIGEST_PROJECTION, GREEN
from otel_mcp_health.version import __version__

EXIT_GREEN = 0
EXIT_NOT_GREEN = 1
EXIT_INPUT_ERROR = 2


class _InputError(Exception):
    """A problem with the user's input, reported with exit code 2."""


def _read_text(name: str) -> str:
    if name == "-":
        return sys.stdin.read().removeprefix("\ufeff")
    try:
        return Path(name).read_text(encoding="utf-8-sig")  # a UTF-8 BOM is accepted
    except READ_ERRORS as exc:
        raise _InputError(f"{name}: {say_read_failure(exc, INPUT_FILE_WORDS)}") from None


def _text_row(row: dict[str, Any]) -> str:
    layer = row.get("firstFailedLayer", "-")
    extra = f"catalog={row['catalogVerdict']}" if "catalogVerdict" in row else ""
    return (
        f"{row['id']:<38} {row['kind']:<8} {row['verdict']:<21} {layer:<14} "
        f"{row['nextAction']:<23} {row['reason']} {extra}"
    ).rstrip()


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f} %"


_HEADER = (
    f"{'id':<38} {'kind':<8} {'verdict':<21} {'first failed':<14} {'next action':<23} reason\n"
)


class _Classification:
    """One ``classify`` run: the worst exit code so far, the call results, the header once."""

    def __init__(self, out: TextIO, err: TextIO, *, as_json: bool) -> None:
        self.out, self.err, self.as_json = out, err, as_json
        self.worst = EXIT_GREEN
        self.calls: list[CallResult] = []
        self.header = not as_json  # printed with the first verdict, never before a failed read

    def file(self, name: str) -> None:
        """Classify every record of one file; a bad file or line is reported, the rest go on."""
        try:
            text = _read_text(name)
        except _InputError as exc:  # reported; the remaining files are still classified
            self._input_error(str(exc))
            return
        records = 0
        shown = "standard input" if name == "-" else name
        for parsed in parse_lines(text.splitlines()):
            records += 1
            if isinstance(parsed, EvidenceError):
                self._input_error(f"{shown}: {parsed}")
            else:
                self._record(parsed, shown)
        if records == 0:
            self._input_error(f"{shown}: no evidence records (empty input)")

    def _input_error(self, message: str) -> None:
        self.err.write(f"otel-mcp-health classify: {message}\n")
        self.worst = EXIT_INPUT_ERROR

    def _record(self, record: Record, shown: str) -> None:
        row, call = judge(record)
        if call is not None:
            self.calls.append(call)
        if row["verdict"] not in GREEN:
            self.worst = max(self.worst, EXIT_NOT_GREEN)  # an input error (2) outranks it
        if self.header:
            self.out.write(_HEADER)
            self.header = False
        self.out.write(json.dumps(row) + "\n" if self.as_json else _text_row(row) + "\n")
        for mismatch in expectation_mismatches(record, row):
            self.err.write(f"{shown}: {record.id}: expectation not met: {mismatch}\n")


def _summary(calls: Sequence[CallResult], *, as_json: bool) -> str:
    """The two call rates over the call records (docs/model.md#two-rates)."""
    summary = rates(calls)
    if as_json:
        row = {
            "kind": "summary",
            "calls": summary.calls,
            "protocolSuccess": summary.protocol_success,
            "verifiedOutcomes": summary.verified_outcomes,
        }
        return json.dumps(row) + "\n"
    return (
        f"calls: {summary.calls}  protocol-level success: "
        f"{_percent(summary.protocol_success)} ({summary.envelopes}/{summary.calls})  "
        f"verified outcomes: {_percent(summary.verified_outcomes)} "
        f"({summary.verified}/{summary.calls})\n"
    )


def _classify(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    run = _Classification(out, err, as_json=args.json)
    for name in args.files:
        run.file(name)
    if args.summary:
        out.write(_summary(run.calls, as_json=args.json))
    return run.worst


def _tools_from(name: str, document: object) -> list[Any]:
    if isinstance(document, dict) and isinstance(document.get("result"), dict):
        document = document["result"]
    if isinstance(document, dict) and "tools" in document:
        document = document["tools"]
    if not isinstance(document, list):
        msg = f'{name}: expected a tools/list result ({{"tools": [...]}}) or a JSON array of tools'
        raise _InputError(msg)
    return document


def _digest(args: argparse.Namespace, out: TextIO, _err: TextIO) -> int:
    text = _read_text(args.file)
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        raise _InputError(f"{args.file}: not valid JSON") from None
    tools = _tools_from(args.file, document)
    try:
        digest = digest_tools(tools)
    except DigestError as exc:
        raise _InputError(f"{args.file}: cannot digest: {exc.reason}") from None
    if args.json:
        row = {"digest": digest, "toolCount": len(tools), "projection": DIGEST_PROJECTION}
        out.write(json.dumps(row) + "\n")
    else:
        out.write(f"{digest}  tools={len(tools)}  projection={DIGEST_PROJECTION}\n")
    return EXIT_GREEN


def _layer_table() -> str:
    lines = ["| layer | fails on | next action |", "|---|---|---|"]
    lines += [f"| `{c.layer.value}` | {c.fails_on} | {c.next_action} |" for c in LAYER_CHECKS]
    return "\n".join(lines)


def rules_markdown() -> str:
    """The three rule tables as Markdown, generated from the code (used by the README)."""
    return (
        "### Catalog convergence\n\n"
        + render_table(CATALOG_RULES)
        + "\n\n### The five-layer call test\n\n"
        + _layer_table()
        + "\n\n### Session health contract\n\n"
        + render_table(VERDICT_RULES)
        + "\n"
    )


def _rules(_args: argparse.Namespace, out: TextIO, _err: TextIO) -> int:
    out.write(rules_markdown())
    return EXIT_GREEN


def _demo(_args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    # Imported here: the demo needs the optional ``mcp`` SDK, the other subcommands do not.
    from otel_mcp_health.demo import main as demo_main

    return demo_main(out, err)


def _outcomes(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from otel_mcp_health.verifiers import OutcomePolicy, OutcomePolicyError, describe

    try:
        policy = OutcomePolicy.load(args.file, strict=True)
    except OutcomePolicyError as exc:
        err.writelines(
            f"otel-mcp-health outcomes: {exc.source}: {problem}\n" for problem in exc.problems
        )
        return EXIT_INPUT_ERROR
    count = len(policy.entries)
    out.write(
        f"{policy.source}: valid, {count} entr{'y' if count == 1 else 'ies'} (the first match "
        "wins; a tool registered in code keeps its own verifier)\n"
    )
    out.writelines(describe(entry) + "\n" for entry in policy.entries)
    if args.tool is not None:
        read_only = True if args.read_only else None
        chosen = policy.match(args.tool, args.server, read_only)
        decision = f"entry {chosen.index} decides ({chosen.kind})" if chosen else "no entry matches"
        out.write(f"tool {args.tool!r}: {decision}\n")
    return EXIT_GREEN


#: The commands that run the instrumented client, in their help order: (help, description).
#: Each is a package with ``add_arguments(parser)`` and ``run(args, out, err)``.
_CLIENT_COMMANDS: Final = {
    "check": (
        "judge any MCP server now: handshake, discovery, optional watch and call",
        (
            "Judge an MCP server with the same instrumentation and processor an instrumented agent "
            "uses. Exit codes: 0 healthy or converged, 1 any other verdict, 2 a usage error."
        ),
    ),
    "probe": (
        "probe the configured MCP servers as a service (Prometheus /probe, OTLP schedule)",
        (
            "Serve /probe?target=NAME&module=MODULE (Prometheus text) and /metrics for the targets "
            "of --config FILE; with --schedule, also probe each on its interval and export over "
            "OTLP. Exit codes: 0 stopped, 2 a bad configuration."
        ),
    ),
    "pin": (
        "approve a server's tools: create, update (--update) or verify (--verify) pins",
        (
            "Pin the digests of a server's tools (docs/approval.md). Exit codes: 0 written, "
            "unchanged or approved; 1 drift or an update not accepted; 2 a usage error or an "
            "unreadable pin file."
        ),
    ),
}


def _add_client_commands(sub: Any) -> None:
    """``check``, ``probe`` and ``pin``: their packages import nothing optional."""
    from otel_mcp_health import check, pin, probe

    packages = {"check": check, "probe": probe, "pin": pin}
    for name, (help_text, description) in _CLIENT_COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=description)
        packages[name].add_arguments(command)
        command.set_defaults(handler=packages[name].run)


def _add_outcomes(sub: Any) -> None:
    outcomes = sub.add_parser(
        "outcomes", help="validate an outcome policy file and show what each entry matches"
    )
    outcomes.add_argument("file", metavar="FILE", help="the policy (TOML, docs/outcomes.md)")
    outcomes.add_argument("--tool", metavar="NAME", help="show which entry decides for NAME")
    outcomes.add_argument("--server", metavar="NAME", help="with --tool: the server's name")
    outcomes.add_argument(
        "--read-only", action="store_true", help="with --tool: the tool is marked readOnlyHint"
    )
    outcomes.set_defaults(handler=_outcomes)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and documentation)."""
    parser = argparse.ArgumentParser(
        prog="otel-mcp-health",
        description="Judge MCP agent health evidence: verdicts, not just liveness.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    classify = sub.add_parser("classify", help="classify evidence records (JSON Lines)")
    classify.add_argument("files", nargs="+", metavar="FILE", help="evidence file, - for stdin")
    classify.add_argument("--json", action="store_true", help="print JSON Lines")
    classify.add_argument("--summary", action="store_true", help="print the two call rates")
    classify.set_defaults(handler=_classify)
    digest = sub.add_parser("digest", help="canonical digest of a tools/list result")
    digest.add_argument("file", metavar="FILE", help="JSON file, - for stdin")
    digest.add_argument("--json", action="store_true", help="print JSON")
    digest.set_defaults(handler=_digest)
    rules = sub.add_parser("rules", help="print the rule tables as Markdown")
    rules.set_defaults(handler=_rules)
    _add_outcomes(sub)
    demo = sub.add_parser("demo", help="run the instrumented MCP client against real servers")
    demo.set_defaults(handler=_demo)
    _add_client_commands(sub)
    return parser


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the CLI; returns the exit code instead of exiting (``__main__`` exits).

    On the process's own standard streams, a reader that stops reading (``| head``) ends that
    output quietly and the exit code still says what was judged (:mod:`._pipes`)."""
    if out is None:
        out = cast("TextIO", QuietPipe(sys.stdout))
        err = err or cast("TextIO", QuietPipe(sys.stderr))
        # argparse writes --help and --version to sys.stdout, usage errors to sys.stderr.
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = _run(argv, out, err)
        out.flush()  # the last EPIPE surfaces here, not in the interpreter's exit flush
        err.flush()
        return code
    return _run(argv, out, err or sys.stderr)


def _run(argv: Sequence[str] | None, out: TextIO, err: TextIO) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_INPUT_ERROR if exc.code else EXIT_GREEN
    try:
        code: int = args.handler(args, out, err)
    except _InputError as exc:
        err.write(f"otel-mcp-health {args.command}: {exc}\n")
        return EXIT_INPUT_ERROR
    return code
