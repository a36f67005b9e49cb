"""Tools from a live server, discovered the way ``otel-mcp-health check`` discovers them.

One engine: the check's own options, transport and discovery (``clientside.driver``: handshake in
either era, every page to the end, the page cap) run inside the check's instrumented pipeline,
so the server label pinned is the one the instrumentation exports (``mcp_health.server.name``,
``server.address``, ``server.port`` on the span that completes the discovery) and the tools are
those of that complete discovery. The client's tool objects are turned back into wire JSON the
way the instrumentation does; their catalog digest must equal the digest on the discovery span,
else nothing is pinned (a pin the run-time comparison could not reproduce would read drifted).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any, Final

from otel_mcp_health import attributes as A
from otel_mcp_health.clientside.command_line import (
    MCP_CLIENT_MODULES,
    CheckOptions,
    UsageError,
    parse_headers,
    positive,
)
from otel_mcp_health.core.digest import DigestError, digest_tools
from otel_mcp_health.core.vocabulary import TOOLS_LIST
from otel_mcp_health.pin._errors import PinInputError
from otel_mcp_health.pin._sources import Source

_HINT: Final = "run otel-mcp-health check with the same server for the verdict"


def options(args: argparse.Namespace) -> CheckOptions:
    """The check's options for a discovery only (no watch, no call, no export)."""
    if args.header and args.url is None:
        raise PinInputError("--header applies to --url only")
    if args.max_pages < 1:
        raise PinInputError("--max-pages expects a positive number of pages")
    try:
        return CheckOptions(
            url=args.url,
            command=tuple(args.command),
            headers=parse_headers(args.header),
            era=args.era,
            timeout_s=positive("--timeout", args.timeout),
            max_pages=args.max_pages,
        )
    except UsageError as exc:
        raise PinInputError(str(exc)) from None


def _wire(tool: Any) -> Mapping[str, Any]:
    # The instrumentation's reading of a client tool object (install reports use the same).
    dumped: Mapping[str, Any] = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


def _discovery(spans: Sequence[Any]) -> Mapping[str, Any] | None:
    """The attributes of the last ``tools/list`` span that completed a discovery (the one
    carrying the catalog digest; the check's install span carries one too, without a label)."""
    found = [
        attrs
        for attrs in (dict(s.attributes or {}) for s in spans)
        if attrs.get(A.MCP_METHOD_NAME) == TOOLS_LIST and A.CATALOG_DIGEST in attrs
    ]
    return found[-1] if found else None


def _failure(facts: Any) -> str | None:
    if facts.timed_out:
        return "timed out"
    if facts.error is not None:
        return f"failed ({facts.error})"
    if facts.discovery_stopped is not None:
        return f"gave no complete discovery ({facts.discovery_stopped})"
    if facts.tools is None:
        return "gave no complete discovery"
    return None


def _run(check_options: CheckOptions) -> tuple[Any, tuple[Any, ...]]:
    """Drive the discovery; the facts and the judged spans."""
    from otel_mcp_health.clientside import driver, pipeline

    built = pipeline.build(otlp=False, service_name=pipeline.SERVICE_NAME)
    with pipeline.instrumented(built) as instrumented:
        facts = driver.drive(check_options, lambda _step: None)
        return facts, instrumented.spans()


def _checked_tools(facts: Any, found: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    tools = tuple(_wire(tool) for tool in facts.tools)
    try:
        same = digest_tools(tools) == found.get(A.CATALOG_DIGEST)
    except DigestError as exc:
        raise PinInputError(f"the server's tools have no digest ({exc.reason})") from None
    if not same:
        raise PinInputError(
            "the client's tool objects do not reproduce the discovery's digest: pin from a "
            "tools/list file (--tools-file) instead"
        )
    return tools


def live_source(args: argparse.Namespace) -> Source:
    """Discover the server's tools and its label (raises :class:`PinInputError`)."""
    check_options = options(args)
    try:
        facts, spans = _run(check_options)
    except ImportError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in MCP_CLIENT_MODULES:
            raise
        raise PinInputError(
            f"pinning a live server needs the MCP SDK (module {missing!r} is missing): "
            "pip install 'otel-mcp-health[instruments]'"
        ) from None
    found = _discovery(spans)
    failure = _failure(facts) or (None if found else "gave no complete discovery")
    if failure is not None or found is None:
        raise PinInputError(f"the server {failure}: nothing pinned; {_HINT}")
    port = found.get(A.SERVER_PORT)
    return Source(
        _checked_tools(facts, found),
        "live",
        name=found.get(A.SERVER_NAME),
        address=found.get(A.SERVER_ADDRESS),
        port=port if isinstance(port, int) else None,
    )
