"""The call-time contract check of a ``tools/call``, planned once per discovery (private).

A hook module (the seam's contract: :data:`._compat.HOOK_MODULES`). What the check finds for a
call is a function of the discovery the call is judged on, the tool's name and the *names* of its
arguments: it is derived once (a :class:`~._state.CallPlan`), kept by the session while calls are
judged on that same discovery object, and looked up by every later call of the same shape. What
depends on each call alone (its agent, a retry of an unreconciled call) stays per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from otel_mcp_health import _codec
from otel_mcp_health.core.bounds import cap, cap_names
from otel_mcp_health.core.catalog import missing_required
from otel_mcp_health.core.evidence import ToolCallCheck
from otel_mcp_health.core.reasons import Reason
from otel_mcp_health.instrumentation import _agent_calls, _agents, _servers
from otel_mcp_health.instrumentation._sdk import SERVER_DISCOVERY
from otel_mcp_health.instrumentation._servers import Discovered
from otel_mcp_health.instrumentation._state import SessionState, Slot

#: Plans a session keeps per discovery (distinct tools and argument-name sets); when full it
#: starts afresh (a plan is rebuilt from the same inputs, never guessed).
MAX_PLANS: Final = 256
#: The largest key a plan is kept under (characters of the tool name and the argument names):
#: both come from the model, so a hostile call is checked afresh instead of being held.
MAX_KEY_CHARS: Final = 4096


@dataclass(slots=True, frozen=True, eq=False)
class CallPlan:
    """What the call-time check finds for one tool and one set of argument names in one
    discovery: the span attributes it adds (shared, read-only) and the tool's ``readOnlyHint``."""

    attributes: dict[str, Any]
    read_only: bool | None = None


@dataclass(slots=True, eq=False)
class CallPlans:
    """A session's plans, all built on ``found``: a discovery is never changed once made (a new
    discovery, a new approval, a server's discovery in place of the session's own is another
    object), so they hold exactly while the session's calls are judged on that same object."""

    found: Discovered
    plans: dict[tuple[Any, ...], CallPlan] = field(default_factory=dict)


def before_call(state: SessionState, slot: Slot, name: Any, arguments: Any) -> None:
    """Call-time contract check (docs/model.md#catalog) against the last complete discovery: the
    session's own, else its server's (a fresh session per call checks as one that listed).

    Only the tool name and the *names* of the arguments are looked at; the fact and the missing
    property names go on the span, argument values never leave this function. When an agent's
    model request offered tools of the call's server, what that agent was offered is compared
    with the same discovery (docs/model.md#agents).
    """
    found = _servers.discovered(state) if isinstance(name, str) else None
    if found is None:
        if _servers.forgotten(state):
            # Nothing to check against, though its server was discovered: missing evidence,
            # never a call that passed its checks (docs/model.md#scope).
            slot.missing = (SERVER_DISCOVERY,)
        return
    if _agents.AGENTS.active:  # the one check a call pays when no model request was recorded
        slot.attributes.update(_agent_calls.call_attributes(state, name, found, arguments))
    plan = _planned(state, found, name, tuple(arguments) if isinstance(arguments, Mapping) else ())
    slot.attributes.update(plan.attributes)
    slot.read_only = plan.read_only


def _planned(state: SessionState, found: Discovered, name: str, names: tuple[Any, ...]) -> CallPlan:
    """The session's plan for a call of ``name`` with ``names`` judged on ``found``, built the
    first time (its plans of an earlier discovery are dropped)."""
    table = state.call_plans
    if table is None or table.found is not found:
        table = state.call_plans = CallPlans(found)
    key = (name, names)
    try:
        plan = table.plans.get(key)
    except TypeError:  # an argument name that cannot be a key: checked afresh, not kept
        return _call_plan(found, name, names)
    if plan is None and not _small(name, names):
        return _call_plan(found, name, names)
    if plan is None:
        plan = _call_plan(found, name, names)
        if len(table.plans) >= MAX_PLANS:
            table.plans.clear()
        table.plans[key] = plan
    return plan


def _small(name: str, names: tuple[Any, ...]) -> bool:
    """Whether a plan may be kept under this key: at most :data:`MAX_KEY_CHARS` characters."""
    size = len(name) + len(names)
    for item in names:
        size += len(item) if type(item) is str else 1
        if size > MAX_KEY_CHARS:
            return False
    return size <= MAX_KEY_CHARS


def _call_plan(found: Discovered, name: str, names: tuple[Any, ...]) -> CallPlan:
    """What the call-time check finds for a call of ``name`` with arguments ``names`` judged on
    ``found``: a function of these three alone (the argument names, never their values)."""
    attrs: dict[str, Any] = {}
    if found.approval is not None and (name in found.tools or found.approval.unapproved(name)):
        # Judged against the same discovery (docs/model.md#approval). A tool that discovery did
        # not list (removed, hidden, misnamed) has no definition to approve: no claim, the
        # call-time contract check (unknown_tool_called) judges it.
        attrs.update(_codec.encode_call_approval(found.approval, name))
    tool = found.tools.get(name)
    if tool is None:
        check = ToolCallCheck(name=cap(name), contract=Reason.UNKNOWN_TOOL_CALLED)
        attrs.update(_codec.encode_tool_call_check(check))
        return CallPlan(attrs)
    missing = missing_required(tool.required, names)
    if not missing:
        attrs.update(_codec.encode_contract(None))
        return CallPlan(attrs, tool.read_only)
    check = ToolCallCheck(
        name=cap(name), contract=Reason.MISSING_REQUIRED_ARGUMENT, missing=tuple(cap_names(missing))
    )
    attrs.update(_codec.encode_tool_call_check(check))
    return CallPlan(attrs, tool.read_only)
