"""``otel-mcp-health pin``: approve a server's tools by pinning their digests (docs/approval.md).

Sources: a live server over any transport ``check`` speaks (``--url`` streamable HTTP, or
``-- COMMAND ARGS`` a stdio server: the check's own options and discovery), a ``tools/list`` JSON
file (``--tools-file``), or an MCP Bundle (``--mcpb``: its ``manifest.json`` or the ``.mcpb``
zip, with ``--sha256 HEX`` verified before anything is read). The server label pinned is the
live server's own (its name, and address and port over HTTP) unless ``--name``, ``--address``,
``--port`` (globs) say otherwise; a file source needs ``--name``.

Exit codes: ``0`` written, unchanged or approved; ``1`` drift (``--verify``) or an update that
was not accepted; ``2`` a usage error, an unusable source or an unreadable or corrupt pin file
(nothing is written).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final, TextIO

from otel_mcp_health.clientside.command_line import CHECK_MAX_PAGES, DEFAULT_TIMEOUT_S, ERA_MODES
from otel_mcp_health.pin._errors import PinInputError
from otel_mcp_health.pin._sources import Source, tools_file

if TYPE_CHECKING:  # the command's modules load when it runs, not when the parser is built
    from otel_mcp_health.core.server import ServerLabel
    from otel_mcp_health.pin._command import PinEntry

EXIT_USAGE: Final = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``pin`` subcommand's options (docs/approval.md), in their help order."""
    parser.add_argument("--pins", required=True, metavar="FILE", help="the pin file (TOML)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--update", action="store_true", help="print the changes to the pins")
    mode.add_argument("--verify", action="store_true", help="exit 0 approved, 1 drift, 2 error")
    parser.add_argument("--accept", action="store_true", help="with --update: write the changes")
    parser.add_argument("--url", help="a live streamable HTTP server, e.g. https://host/mcp")
    parser.add_argument("--tools-file", metavar="FILE", help="a tools/list result (JSON)")
    parser.add_argument("--mcpb", metavar="FILE", help="an MCPB bundle: .mcpb or manifest.json")
    parser.add_argument("--sha256", metavar="HEX", help="with --mcpb: the bundle's SHA-256")
    parser.add_argument("--name", metavar="GLOB", help="the server name the pins apply to")
    parser.add_argument("--address", metavar="GLOB", help="the server address they apply to")
    parser.add_argument("--port", metavar="GLOB", help="the server port they apply to")
    parser.add_argument(
        "--header", action="append", default=[], metavar="NAME=VALUE", help="with --url"
    )
    parser.add_argument("--era", choices=tuple(ERA_MODES), default="auto", help="handshake era")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS")
    parser.add_argument("--max-pages", type=int, default=CHECK_MAX_PAGES, metavar="N")
    parser.add_argument("command", nargs="*", metavar="-- COMMAND ARGS", help="a live stdio server")


def _source(args: argparse.Namespace) -> Source:
    given = [args.url is not None, bool(args.command), args.tools_file is not None]
    given.append(args.mcpb is not None)
    if sum(given) != 1:
        raise PinInputError("give one source: --url, -- COMMAND ARGS, --tools-file or --mcpb")
    if args.sha256 is not None and args.mcpb is None:
        raise PinInputError("--sha256 applies to --mcpb only")
    if args.tools_file is not None:
        return tools_file(args.tools_file)
    if args.mcpb is not None:
        from otel_mcp_health.pin._mcpb import expected_sha256, mcpb_source

        return mcpb_source(args.mcpb, expected_sha256(args.sha256))
    from otel_mcp_health.pin._from_server import live_source

    return live_source(args)


def _target(args: argparse.Namespace, source: Source) -> PinEntry:
    from otel_mcp_health.pin._command import PinEntry, escaped

    name = args.name if args.name is not None else escaped(source.name)
    if not name:
        raise PinInputError("give --name: the server name the pins apply to (a glob)")
    address = args.address if args.address is not None else escaped(source.address)
    port = args.port if args.port is not None else None
    if port is None and source.port is not None:
        port = str(source.port)
    return PinEntry(args.pins, name, address, port)


def _label(args: argparse.Namespace, source: Source) -> ServerLabel:
    """The server as the run time sees it: the source's own label, else the options'."""
    from otel_mcp_health.core.server import ServerLabel

    name = source.name if args.name is None else args.name
    if name is None:
        raise PinInputError("give --name: the server name to verify")
    port = source.port
    if args.port is not None:
        if not args.port.isdigit():
            raise PinInputError("--port with --verify expects the server's port number")
        port = int(args.port)
    address = source.address if args.address is None else args.address
    return ServerLabel(name, address, port)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run one ``pin``; returns the exit code (every problem is one line on ``err``)."""
    from otel_mcp_health.pin._command import create, read_pins, verify

    try:
        if args.accept and not args.update:
            raise PinInputError("--accept applies to --update only")
        # The pin file is read first: a corrupt one fails before any server is started.
        pins = read_pins(args.pins, missing_ok=not args.verify)
        source = _source(args)
        err.writelines(f"otel-mcp-health pin: note: {note}\n" for note in source.notes)
        if args.verify and pins is not None:
            return verify(pins, source, _label(args, source), out)
        target = _target(args, source)
        return create(pins, source, target, update=args.update, accept=args.accept, out=out)
    except PinInputError as exc:
        err.write(f"otel-mcp-health pin: {exc}\n")
        return EXIT_USAGE
