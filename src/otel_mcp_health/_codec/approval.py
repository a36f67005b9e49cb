"""Evidence of approved catalogs (docs/attributes.md, docs/model.md#approval).

A discovery's approval goes on the page span that completes it: the verdict, its reason, the
counts per class of change, the names of the tools concerned (sorted, at most
``core.approval.MAX_TOOL_NAMES`` per class, each capped like every exported name) and the
projected member names that differ, and those a partial pin never compared. A ``tools/call`` span
carries whether its tool's current definition is approved (and whether its pin is partial), judged
against the discovery the call was made on. Names and codes only: never a description, a schema, a
member value or the pin file's path.
"""

from __future__ import annotations

from typing import Any, Final

from otel_mcp_health import attributes as A
from otel_mcp_health._codec._read import Attributes, read_str
from otel_mcp_health.core.approval import MAX_TOOL_NAMES, Approval
from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.reasons import ApprovalReason, Reason
from otel_mcp_health.core.vocabulary import ApprovalVerdict, CallApproval

#: Why a call's tool is unapproved, as the call span says it (``mcp_health.call.approval.reason``).
_CALL_REASONS: Final = frozenset({Reason.TOOL_UNAPPROVED.value, Reason.PINS_UNREADABLE.value})


def encode_catalog_approval(approval: Approval | None) -> dict[str, Any]:
    """A complete discovery's approval (nothing when no approved catalog is configured)."""
    if approval is None:
        return {}
    classes = (
        (A.CATALOG_APPROVAL_MATERIAL_COUNT, A.CATALOG_APPROVAL_MATERIAL_TOOLS, approval.material),
        (A.CATALOG_APPROVAL_COSMETIC_COUNT, A.CATALOG_APPROVAL_COSMETIC_TOOLS, approval.cosmetic),
        (A.CATALOG_APPROVAL_ADDED_COUNT, A.CATALOG_APPROVAL_ADDED_TOOLS, approval.added),
        (A.CATALOG_APPROVAL_REMOVED_COUNT, A.CATALOG_APPROVAL_REMOVED_TOOLS, approval.removed),
    )
    attrs: dict[str, Any] = {A.CATALOG_APPROVAL: approval.verdict.value}
    if approval.reason is not None:
        attrs[A.CATALOG_APPROVAL_REASON] = str(approval.reason)
    truncated = False
    for count, names_key, names in classes:
        attrs[count] = len(names)
        if names:
            attrs[names_key] = [cap(name) for name in names[:MAX_TOOL_NAMES]]
            truncated = truncated or len(names) > MAX_TOOL_NAMES
    if approval.changed_members:
        attrs[A.CATALOG_APPROVAL_CHANGED_MEMBERS] = list(approval.changed_members)
    if approval.uncompared_members:
        attrs[A.CATALOG_APPROVAL_UNCOMPARED_MEMBERS] = list(approval.uncompared_members)
    if truncated:
        attrs[A.CATALOG_APPROVAL_TOOLS_TRUNCATED] = True
    return attrs


def encode_call_approval(approval: Approval, tool: str) -> dict[str, Any]:
    """Whether the called ``tool``'s definition in the discovery the call is judged against is
    approved: ``unapproved`` (with why) when it was added or changed materially since the pins,
    or when the pins could not be read; ``unpinned`` when no pins cover the server. An approved tool
    whose pin is partial also carries ``mcp_health.call.approval.partial = true``."""
    if approval.verdict is ApprovalVerdict.UNPINNED:
        return {A.CALL_APPROVAL: CallApproval.UNPINNED.value}
    if not approval.unapproved(tool):
        if approval.partial(tool):  # approved, but not every material member was compared
            return {A.CALL_APPROVAL: CallApproval.APPROVED.value, A.CALL_APPROVAL_PARTIAL: True}
        return {A.CALL_APPROVAL: CallApproval.APPROVED.value}
    unreadable = approval.reason == ApprovalReason.PINS_UNREADABLE
    reason = Reason.PINS_UNREADABLE if unreadable else Reason.TOOL_UNAPPROVED
    return {A.CALL_APPROVAL: CallApproval.UNAPPROVED.value, A.CALL_APPROVAL_REASON: reason.value}


def decode_call_approval(attrs: Attributes) -> str | None:
    """Why a call's tool is not approved (``tool_unapproved`` / ``pins_unreadable``), or
    ``None`` (approved, unpinned, or no approved catalog)."""
    if read_str(attrs, A.CALL_APPROVAL) != CallApproval.UNAPPROVED.value:
        return None
    reason = read_str(attrs, A.CALL_APPROVAL_REASON)
    return reason if reason in _CALL_REASONS else Reason.TOOL_UNAPPROVED.value
