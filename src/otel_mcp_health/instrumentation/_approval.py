"""Approved catalogs at run time: the pins, read once, and the approval of each discovery (private).

With an approved catalog configured (``OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG`` or
``instrument(approved_catalog=PATH)``; docs/approval.md), :func:`load` reads the pin file once,
when the instrumentor instruments. Every complete application discovery is then compared with the
pins of its server, matched on the server's exported label (``mcp_health.server.name``,
``server.address``, ``server.port``: :func:`label`), by the pure core
(:func:`otel_mcp_health.core.approval.judge_approval`). The approval is kept beside the discovery
(``_servers.Discovered``) so that a call, in the same session or in a fresh one of the same server,
is judged against the discovery it was made on (docs/model.md#approval).

A file that cannot be read or parsed fails closed: one warning naming it (a Python warning, so on
the local stderr and never in an exported span, metric or OTLP log), and every discovery reads
``drifted`` / ``pins_unreadable``. Nothing here raises into the host.
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from otel_mcp_health._files import read_pin_text
from otel_mcp_health.core.approval import UNREADABLE_PINS, Approval, ToolChange, judge_approval
from otel_mcp_health.core.pins import PinFile, PinsError, parse_pins
from otel_mcp_health.core.reasons import ApprovalReason
from otel_mcp_health.core.server import ServerLabel
from otel_mcp_health.core.vocabulary import ApprovalVerdict, ChangeKind
from otel_mcp_health.instrumentation import _servers
from otel_mcp_health.instrumentation._state import SessionState

_logger = logging.getLogger(__name__)


class ApprovedCatalogWarning(UserWarning):
    """The approved catalog (pin file) could not be used: every discovery reads drifted."""


@dataclass(frozen=True, slots=True)
class Pins:
    """The approved catalog discoveries are judged with: its pins, or ``None`` when the file
    could not be read or parsed (fail closed: :data:`UNREADABLE_PINS` for every server)."""

    file: PinFile | None


def load(path: str) -> Pins:
    """The pins of ``path``; a file that cannot be read or parsed is one warning naming it (the
    reason is a code or an exception class, never the file's contents) and fails closed."""
    try:
        return Pins(parse_pins(read_pin_text(path)))
    except PinsError as exc:
        why = exc.reason
    except Exception as exc:  # noqa: BLE001 - never break the host at start-up; a message may quote the file
        why = type(exc).__name__
    try:
        _warn_locally(
            f"mcp_health: approved catalog {path} is unreadable ({why}); every catalog "
            "discovered reads drifted / pins_unreadable and every call stale_catalog until it is "
            "fixed (check it with: otel-mcp-health pin --verify)"
        )
    except Exception:
        _logger.debug("approved catalog warning failed", exc_info=True)
    return Pins(None)


#: The lines :func:`_warn_locally` wrote to stderr itself.
_WRITTEN: set[str] = set()


def _warn_locally(message: str) -> None:
    """A Python warning on the local stderr. When the application routed warnings into logging
    (``logging.captureWarnings(True)``), a warning would become a log record that an OTLP log
    handler exports with the file's path: then the line goes to stderr directly."""
    if warnings.showwarning is not getattr(warnings, "_showwarning_orig", warnings.showwarning):
        if message not in _WRITTEN:  # once per process, as the default warnings filter does
            _WRITTEN.add(message)
            sys.stderr.write(f"{ApprovedCatalogWarning.__name__}: {message}\n")
        return
    warnings.warn(message, ApprovedCatalogWarning, stacklevel=3)


def label(state: SessionState) -> ServerLabel:
    """The session's server as its pins are matched: its exported label."""
    return state.server_identity().label


def judge(pins: Pins, state: SessionState, tools: Sequence[Mapping[str, Any]]) -> Approval:
    """The approval of a complete discovery of the session's server. The core never raises; if
    it did, every listed tool counts as changed materially (fail closed, never green)."""
    if pins.file is None:
        return UNREADABLE_PINS
    try:
        return judge_approval(pins.file.for_server(label(state)), tools)
    except Exception:  # our own failure must neither reach the host nor pass as approved
        _logger.debug("approval of a discovery failed; every tool counts as changed", exc_info=True)
        names = sorted({name for tool in tools if isinstance(name := tool.get("name"), str)})
        changes = tuple(ToolChange(name, ChangeKind.MATERIAL) for name in names)
        return Approval(ApprovalVerdict.DRIFTED, ApprovalReason.MATERIAL_CHANGE, changes)


def taint(pins: Pins, state: SessionState, tools: Sequence[Mapping[str, Any]]) -> None:
    """An SDK-internal listing (an output-schema refresh; a 2026-07-28 ``HEADER_MISMATCH``
    re-list, which refreshes the ``Client``'s response cache the application reads next) can put
    definitions before the model without a discovery. A tool it lists that is added or changed
    materially makes the last discovery of the session (and of its server) unapproved for that
    tool; it never approves anything, and a partial listing removes nothing."""
    found = _servers.discovered(state)
    if (
        found is None
        or found.approval is None
        or found.approval.verdict is ApprovalVerdict.UNPINNED
    ):
        return
    seen = judge(pins, state, tools)
    worse = (ChangeKind.MATERIAL, ChangeKind.ADDED)
    extra = tuple(
        change
        for change in seen.changes
        if change.kind in worse and not found.approval.unapproved(change.name)
    )
    if not extra:
        return
    old = found.approval
    kept = tuple(change for change in old.changes if change.name not in {c.name for c in extra})
    changes = kept + extra
    reason = old.reason
    if old.verdict is not ApprovalVerdict.DRIFTED:
        material = any(change.kind is ChangeKind.MATERIAL for change in changes)
        reason = ApprovalReason.MATERIAL_CHANGE if material else ApprovalReason.TOOL_ADDED
    uncompared = tuple(sorted({*old.uncompared_members, *seen.uncompared_members}))
    partial = tuple(sorted({*old.partial_tools, *seen.partial_tools}))
    tainted = Approval(ApprovalVerdict.DRIFTED, reason, changes, uncompared, partial)
    _servers.retaint(state, found, tainted)
