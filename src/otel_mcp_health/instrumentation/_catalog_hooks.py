"""Hooks of the catalog: ``tools/list`` pages and the traversal they form, reported installs.

A hook module (the seam's contract: :data:`._compat.HOOK_MODULES`). Tool definitions stay in
memory (for the catalog digest and the call-time contract check); spans get digests and counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.trace import SpanKind

from otel_mcp_health import attributes as A
from otel_mcp_health._codec import encode_catalog_key, encode_digest, encode_install_check
from otel_mcp_health.core.digest import DigestError, digest_tools, digests
from otel_mcp_health.core.evidence import Page
from otel_mcp_health.core.facts import CatalogEnd, PageResult
from otel_mcp_health.core.install import compare_install
from otel_mcp_health.core.reasons import DigestReason
from otel_mcp_health.core.vocabulary import DIGEST_PROJECTION, ClientSource
from otel_mcp_health.instrumentation import _approval, _servers, _state
from otel_mcp_health.instrumentation._state import (
    RequestRecord,
    SessionState,
    Telemetry,
    cursor_hash,
)
from otel_mcp_health.instrumentation._traversals import open_traversal


def page_result(telemetry: Telemetry, record: RequestRecord, result: Mapping[str, Any]) -> None:
    """One ``tools/list`` page: chain facts, counts and digests; a completed traversal's digest.

    A page costs a small constant wherever it falls in its traversal: one keyed hash (its
    ``nextCursor``'s; its own cursor's was taken when the request started), its own tools'
    digest, one step of the chain's walk; the catalog's digest is computed once, on the last
    page, and not again when the traversal had one page (then it is the page's digest).
    """
    cursor = record.params.get("cursor")
    cursor = cursor if isinstance(cursor, str) else None
    next_cursor = result.get("nextCursor")
    next_cursor = next_cursor if isinstance(next_cursor, str) else None
    raw_tools = result.get("tools")
    tools = [t for t in raw_tools if isinstance(t, Mapping)] if isinstance(raw_tools, list) else []
    cursor_h = _cursor_hash(record, cursor)
    next_hash = cursor_hash(next_cursor) if next_cursor is not None else None
    internal = record.origin == A.ORIGIN_INTERNAL
    whole = cursor is None and next_cursor is None and not internal  # a one-page traversal
    digested = _digest(tools, per_tool=whole) if telemetry.digests else (None, None, None)
    page = Page(cursor=cursor_h, next_cursor=next_hash)
    if telemetry.pins is not None and tools and not whole:
        # A page the model may read before (or without) a complete discovery: an SDK-internal
        # listing, or a page of a traversal that never completes (docs/model.md#approval).
        _approval.taint(telemetry.pins, record.state, tools)
    if internal:
        index = 0 if cursor is None else None
        record.observe(PageResult(page, len(tools), *digested[:2], index=index))
        return
    index, catalog = _advance(telemetry, record.state, (cursor_h, next_hash), tools, digested)
    record.observe(PageResult(page, len(tools), *digested[:2], index=index, catalog=catalog))


def _cursor_hash(record: RequestRecord, cursor: str | None) -> str | None:
    """The keyed hash of the page's cursor: the one its span started with (same params)."""
    if cursor is None:
        return None
    started = record.span_attributes.get(A.CATALOG_PAGE_CURSOR_HASH)
    return started if isinstance(started, str) else cursor_hash(cursor)


def _advance(
    telemetry: Telemetry,
    state: SessionState,
    link: tuple[str | None, str | None],
    tools: list[Mapping[str, Any]],
    digested: _Digested,
) -> tuple[int, CatalogEnd | None]:
    """Walk the page's traversal one page (``_traversals.open_traversal``: concurrent traversals of
    one session are told apart by their cursors): the page's index in it and, at its end, the
    catalog (``digested``: this page's digest, or why none, the catalog's when it is the only
    page)."""
    cursor_h, next_hash = link
    traversal = open_traversal(state, cursor_h, telemetry.max_pages)
    index = traversal.chain.pages
    traversal.chain.add(cursor_h, next_hash)
    traversal.last_next = next_hash
    if not traversal.chain.intact:
        traversal.tools.clear()  # a broken or over-long chain has no catalog digest
    else:
        traversal.tools.extend(dict(t) for t in tools)
    if next_hash is not None:
        return index, None
    if traversal in state.traversals:
        state.traversals.remove(traversal)
    if not traversal.chain.intact:
        return index, None
    approval = _approval.judge(telemetry.pins, state, traversal.tools) if telemetry.pins else None
    if not telemetry.digests:
        found: _Digested = (None, None, None)
        end = CatalogEnd(len(traversal.tools), approval=approval)
    else:  # one page: the same tools, the same digests
        found = digested if index == 0 else _digest(traversal.tools, per_tool=True)
        end = CatalogEnd(len(traversal.tools), DIGEST_PROJECTION, *found[:2], approval=approval)
    _servers.completed(state, traversal.tools, found[0], found[2], approval)
    return index, end


#: A digest, or why there is none, and the per-tool digests when asked for.
_Digested = tuple[str | None, str | None, dict[str, str] | None]


def _digest(tools: Sequence[Mapping[str, Any]], *, per_tool: bool = False) -> _Digested:
    """The tools' digest (and per tool, one pass), or why there is none."""
    try:
        if per_tool:
            digest, per = digests(tools)
            return digest, None, per
        return digest_tools(tools), None, None
    except DigestError as exc:
        return None, exc.reason, None
    except (RecursionError, MemoryError, TypeError, ValueError):
        return None, DigestReason.UNREPRESENTABLE, None  # never a digest of a guess


def installed_tools(telemetry: Telemetry, target: Any, tools: Any) -> None:
    """Emit the ``mcp_health.install`` span for what the application exposes to its agent.

    Whatever ``tools`` holds, the report is never dropped: something that is not a list of tool
    definitions gives a digest error (``tool_not_an_object``), which the processor judges
    ``unverifiable`` (docs/model.md#catalog). The installed tools are compared tool by tool with
    the session's (else its server's) last complete discovery (``core.install.compare_install``:
    a subset of equal definitions matches); the span carries that comparison and which discovery
    it was made with, never a definition.
    """
    state = _state.session_state(target)
    if state is None:
        return
    projected, error = _wire_tools(tools)
    attrs: dict[str, Any] = {
        A.SESSION_KEY: state.key,
        **encode_catalog_key(state.server_identity().catalog),
        A.CATALOG_CLIENT_SOURCE: ClientSource.REGISTERED.value,
        A.CATALOG_CLIENT_TOOL_COUNT: len(projected),
        A.CATALOG_DIGEST_PROJECTION: DIGEST_PROJECTION,
    }
    per_tool: dict[str, str] | None = None
    if error is None:
        digest, error, per_tool = _digest(projected, per_tool=True)
        attrs.update(encode_digest(digest, error, of="client"))
    else:
        attrs.update(encode_digest(None, error, of="client"))
    if per_tool is not None:
        attrs.update(_compared(state, per_tool))
    telemetry.tracer.start_span(A.INSTALL_SPAN_NAME, kind=SpanKind.INTERNAL, attributes=attrs).end()


def _compared(state: SessionState, installed: dict[str, str]) -> dict[str, Any]:
    """The install (its per-tool digests) compared with the discovery it is judged against, or
    nothing without one."""
    found = _servers.discovered(state)
    if found is None or found.digests is None:
        return {}
    return encode_install_check(
        compare_install(installed, found.digests, discovery_digest=found.digest)
    )


def _wire_tools(tools: Any) -> tuple[list[Mapping[str, Any]], str | None]:
    """Tool definitions as wire dicts, or the reason they are not tool definitions."""
    try:
        items = list(tools)
    except Exception:  # noqa: BLE001 - an iterable the application handed us may fail in any way: not tool definitions
        return [], DigestReason.TOOL_NOT_AN_OBJECT
    projected: list[Mapping[str, Any]] = []
    for tool in items:
        wire = _wire_tool(tool)
        if wire is None:
            return [], DigestReason.TOOL_NOT_AN_OBJECT
        projected.append(wire)
    return projected, None


def _wire_tool(tool: Any) -> Mapping[str, Any] | None:
    if isinstance(tool, Mapping):
        return tool
    dump = getattr(tool, "model_dump", None)
    if not callable(dump):
        return None
    try:
        dumped = dump(by_alias=True, exclude_none=True, mode="json")
    except Exception:  # noqa: BLE001 - a foreign model_dump may fail in any way: not a tool definition
        return None
    return dumped if isinstance(dumped, Mapping) else None
