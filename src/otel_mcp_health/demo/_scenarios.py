"""The demo's scenarios: each labelled step and the verdicts its spans must carry.

The demo's contract with itself, in running order (:mod:`._drive` runs them, :mod:`._verdict_table`
checks the exported spans against them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from otel_mcp_health import attributes as A
from otel_mcp_health.core.vocabulary import TOOLS_CALL

#: Put in every argument value the demo sends. The servers echo arguments in their results and
#: error messages; the test suite checks that this value never reaches the printed output.
CANARY: Final = "demo-canary-4e1f7b"
#: Label attribute of the demo's own spans: demo bookkeeping, not product telemetry (not an MCP
#: span, so the processor forwards it untouched; the product's names live in ``attributes``).
SCENARIO_ATTRIBUTE: Final = "demo.scenario"


@dataclass(frozen=True, slots=True)
class Scenario:
    """One labelled step and the verdicts its spans must carry: ``(span name, verdict)``."""

    label: str
    expected: tuple[tuple[str, str], ...]


def _call(tool: str, verdict: str) -> tuple[str, str]:
    return (f"{TOOLS_CALL} {tool}", verdict)


# The demo's contract with itself, in running order. A scenario's spans are compared with its
# expectations as a multiset (two spans of one scenario may end in either order).
HTTP_CATALOG = Scenario("http: list 2 pages, export_report", (_call("export_report", "healthy"),))
HTTP_BROKEN = Scenario(
    "http: export_report_broken", (_call("export_report_broken", "false_success"),)
)
HTTP_TICKET = Scenario("http: create_ticket (isError)", (_call("create_ticket", "tool_failed"),))
HTTP_WRONG_ARGS = Scenario(
    "http: search, query of wrong type", (_call("search", "protocol_error"),)
)
HTTP_POLICY = Scenario("http: search (not_required)", (_call("search", "healthy"),))
HTTP_NO_VERIFIER = Scenario(
    "http: notify_team (no verifier)", (_call("notify_team", "unverified"),)
)
HTTP_UNKNOWN_TOOL = Scenario(
    "http: unknown tool export_reports", (_call("export_reports", "stale_catalog"),)
)
# The ``server/discover`` probe is superseded by the fallback ``initialize``: one attempt, one
# judgement (docs/model.md#handshake).
HTTP_AUTHN = Scenario("http: /authn answers 401", (("initialize", "needs_auth"),))
HTTP_CLOSED = Scenario("http: closed port", (("server/discover", "transport_error"),))
# The silent call and its reconciliation run in-process: over HTTP, a call that timed out never
# saw its HTTP status, so its authorization layer stays unobserved and, even once the effect is
# confirmed and its receipt passes, the reconciled call is at best ``unverified``.
INPROC_TIMEOUT = Scenario(
    "in-process: list, publish_slow times out", (_call("publish_slow", "effect_unknown"),)
)
INPROC_RECONCILED = Scenario(
    "in-process: reconcile publish_slow", ((A.RECONCILE_SPAN_NAME, "healthy"),)
)
INPROC_ANNOUNCE = Scenario(
    "in-process: announce_change", (_call("announce_change", "stale_catalog"),)
)
INPROC_STALE = Scenario("in-process: search, no re-list", (_call("search", "stale_catalog"),))
INPROC_RELIST = Scenario("in-process: re-list, search", (_call("search", "healthy"),))
STDIO_EXPORT = Scenario("stdio: list 2 pages, export_report", (_call("export_report", "healthy"),))
SCENARIOS: Final = (
    HTTP_CATALOG,
    HTTP_BROKEN,
    HTTP_TICKET,
    HTTP_WRONG_ARGS,
    HTTP_POLICY,
    HTTP_NO_VERIFIER,
    HTTP_UNKNOWN_TOOL,
    HTTP_AUTHN,
    HTTP_CLOSED,
    INPROC_TIMEOUT,
    INPROC_RECONCILED,
    INPROC_ANNOUNCE,
    INPROC_STALE,
    INPROC_RELIST,
    STDIO_EXPORT,
)
