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

import errno
import logging
import os
import stat
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from otel_mcp_health.core.approval import UNREADABLE_PINS, Approval, ToolChange, judge_approval
from otel_mcp_health.core.pin_codec import MAX_PIN_FILE_BYTES
from otel_mcp_health.core.pins import PinFile, PinsError, ServerLabel, parse_pins
from otel_mcp_health.core.vocabulary import ApprovalReason, ApprovalVerdict, ChangeKind
from otel_mcp_health.instrumentation._state import SessionState

_logger = logging.getLogger(__name__)


class ApprovedCatalogWarning(UserWarning):
    """The approved catalog (pin file) could not be used: every discovery reads drifted."""


@dataclass(frozen=True, slots=True)
class Pins:
    """The approved catalog discoveries are judged with: its pins, or ``None`` when the file
    could not be read or parsed (fail closed: :data:`UNREADABLE_PINS` for every server)."""

    file: PinFile | None


def read_pin_text(path: str) -> str:
    """The text of the pin file: a regular file (opened without blocking, so a FIFO or a
    device never stalls the host at start-up) of at most ``MAX_PIN_FILE_BYTES``, else OSError
    or ValueError (a too large file, not UTF-8)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise IsADirectoryError(errno.EINVAL, "not a regular file")
        data = handle.read(MAX_PIN_FILE_BYTES + 1)
    if len(data) > MAX_PIN_FILE_BYTES:
        raise ValueError("pin file too large")
    return data.decode("utf-8")


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
        warnings.warn(
            f"mcp_health: approved catalog {path} is unreadable ({why}); every catalog "
            "discovered reads drifted / pins_unreadable and every call stale_catalog until it is "
            "fixed (check it with: otel-mcp-health pin --verify)",
            ApprovedCatalogWarning,
            stacklevel=2,
        )
    except Exception:
        _logger.debug("approved catalog warning failed", exc_info=True)
    return Pins(None)


def label(state: SessionState) -> ServerLabel:
    """The session's server as its pins are matched: its exported label."""
    return ServerLabel(name=state.server_name, address=state.server_address, port=state.server_port)


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
