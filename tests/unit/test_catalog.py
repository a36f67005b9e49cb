"""Catalog convergence (SPEC §3): every rule row, each with positive and near-miss cases."""

from __future__ import annotations

from typing import Any

import pytest

from otel_mcp_health.core.catalog import CATALOG_RULES, classify_catalog
from otel_mcp_health.core.digest import digest_tools
from otel_mcp_health.core.evidence import (
    CatalogEvidence,
    Discovery,
    Page,
    RefreshPolicy,
    ToolCallCheck,
)
from otel_mcp_health.core.vocabulary import CatalogVerdict, ClientSource, NextAction

S = 1_000_000_000
T0 = 1_800_000_000 * S
A = {"name": "a", "inputSchema": {"type": "object", "required": ["x"]}}
B = {"name": "b", "inputSchema": {"type": "object"}}


def page(cursor: str | None, nxt: str | None, *tools: dict[str, Any]) -> Page:
    return Page(cursor=cursor, next_cursor=nxt, tools=tuple(tools))


def disc(start: int, end: int | None, *pages: Page, **kw: Any) -> Discovery:
    end_ns = None if end is None else T0 + end * S
    return Discovery(started_at=T0 + start * S, completed_at=end_ns, pages=pages, **kw)


FULL = disc(10, 11, page(None, "c1", A), page("c1", None, B))
POLICY_60 = RefreshPolicy(max_age_seconds=60)


def catalog(**kw: Any) -> CatalogEvidence:
    base: dict[str, Any] = {"list_changed": True, "now": T0 + 70 * S, "discoveries": (FULL,)}
    base.update(kw)
    return CatalogEvidence(**base)


CASES: list[tuple[str, str, CatalogEvidence, CatalogVerdict, str]] = [
    (
        "no-discovery",
        "no_discovery",
        catalog(discoveries=()),
        CatalogVerdict.UNVERIFIABLE,
        "no_discovery",
    ),
    (
        "first-page-only",
        "incomplete_traversal",
        catalog(discoveries=(disc(10, None, page(None, "c1", A)),)),
        CatalogVerdict.INCOMPLETE,
        "cursor_remaining",
    ),
    (
        "abandoned-before-any-page",
        "incomplete_traversal",
        catalog(discoveries=(disc(10, None),)),
        CatalogVerdict.INCOMPLETE,
        "cursor_remaining",
    ),
    (
        "gap",
        "incomplete_traversal",
        catalog(discoveries=(disc(10, 11, page(None, "c1", A), page("zz", None, B)),)),
        CatalogVerdict.INCOMPLETE,
        "cursor_gap",
    ),
    (
        "first-page-has-cursor",
        "incomplete_traversal",
        catalog(discoveries=(disc(10, 11, page("c0", None, A)),)),
        CatalogVerdict.INCOMPLETE,
        "cursor_gap",
    ),
    (
        "loop",
        "incomplete_traversal",
        catalog(
            discoveries=(
                disc(10, 11, page(None, "c1", A), page("c1", "c1", B), page("c1", None, B)),
            )
        ),
        CatalogVerdict.INCOMPLETE,
        "cursor_loop",
    ),
    (
        "failed-page",
        "incomplete_traversal",
        catalog(
            discoveries=(
                disc(
                    10, 11, page(None, "c1", A), Page(cursor="c1", failed=True, error_code=-32602)
                ),
            )
        ),
        CatalogVerdict.INCOMPLETE,
        "page_failed",
    ),
    (
        "latest-unfinished-after-complete",
        "incomplete_traversal",
        catalog(discoveries=(FULL, disc(20, None, page(None, "c1", A)))),
        CatalogVerdict.INCOMPLETE,
        "cursor_remaining",
    ),
    (
        "chain-complete-but-no-completion-time",
        "incomplete_traversal",
        catalog(discoveries=(disc(10, None, page(None, None, A)),)),
        CatalogVerdict.INCOMPLETE,
        "completion_unrecorded",
    ),
    (
        "nan-in-schema",
        "digest_unknown",
        catalog(
            discoveries=(
                disc(
                    10,
                    11,
                    page(None, None, {"name": "n", "inputSchema": {"maximum": float("nan")}}),
                ),
            )
        ),
        CatalogVerdict.UNVERIFIABLE,
        "digest_unrepresentable",
    ),
    (
        "client-tools-unrepresentable",
        "digest_unknown",
        catalog(client_tools=({"name": "a", "description": 2**60},)),
        CatalogVerdict.UNVERIFIABLE,
        "digest_unrepresentable",
    ),
    (
        "recorder-digest-error",
        "digest_unknown",
        catalog(discoveries=(disc(10, 11, Page(), digest_error="digest_unrepresentable"),)),
        CatalogVerdict.UNVERIFIABLE,
        "digest_unrepresentable",
    ),
    (
        "pages-without-tools-or-digest",
        "digest_unknown",
        catalog(discoveries=(disc(10, 11, Page()),)),
        CatalogVerdict.UNVERIFIABLE,
        "digest_unavailable",
    ),
    (
        "silent-no-policy",
        "silent_server_freshness",
        catalog(list_changed=False),
        CatalogVerdict.UNVERIFIABLE,
        "no_refresh_policy",
    ),
    (
        "capability-unobserved-no-policy",
        "silent_server_freshness",
        catalog(list_changed=None),
        CatalogVerdict.UNVERIFIABLE,
        "no_refresh_policy",
    ),
    (
        "silent-policy-overdue",
        "silent_server_freshness",
        catalog(list_changed=False, refresh_policy=POLICY_60, now=T0 + 71 * S + 1),
        CatalogVerdict.STALE,
        "refresh_overdue",
    ),
    (
        "silent-policy-no-clock",
        "silent_server_freshness",
        catalog(list_changed=False, refresh_policy=POLICY_60, now=None),
        CatalogVerdict.UNVERIFIABLE,
        "clock_unobserved",
    ),
    (
        "signal-before-start",
        "signal_after_discovery",
        catalog(notifications=(T0 + 10 * S,)),
        CatalogVerdict.STALE,
        "signal_after_discovery",
    ),
    (
        "signal-during-traversal",
        "signal_after_discovery",
        catalog(notifications=(T0 + 9 * S, T0 + 10 * S + S // 2)),
        CatalogVerdict.STALE,
        "signal_after_discovery",
    ),
    (
        "signal-after-completion",
        "signal_after_discovery",
        catalog(notifications=(T0 + 50 * S,)),
        CatalogVerdict.STALE,
        "signal_after_discovery",
    ),
    (
        "client-installs-a-subset",
        "converged",
        catalog(client_tools=(A,)),
        CatalogVerdict.CONVERGED,
        "ok",
    ),
    (
        "client-changed-a-definition",
        "digest_mismatch",
        catalog(client_tools=({**A, "description": "new"},)),
        CatalogVerdict.STALE,
        "digest_mismatch",
    ),
    (
        "client-installs-an-unlisted-tool",
        "digest_mismatch",
        catalog(client_tools=(A, {"name": "gone"})),
        CatalogVerdict.STALE,
        "installed_tool_unlisted",
    ),
    (
        "client-installs-nothing",
        "digest_mismatch",
        catalog(client_tools=()),
        CatalogVerdict.STALE,
        "nothing_installed",
    ),
    (
        "client-digest-differs",
        "digest_mismatch",
        catalog(client_digest="sha256:00"),
        CatalogVerdict.STALE,
        "digest_mismatch",
    ),
    (
        "unknown-tool",
        "unknown_tool_called",
        catalog(tool_calls=(ToolCallCheck(name="zz", argument_names=()),)),
        CatalogVerdict.STALE,
        "unknown_tool_called",
    ),
    (
        "recorded-unknown-tool",
        "unknown_tool_called",
        catalog(tool_calls=(ToolCallCheck(name="zz", contract="unknown_tool_called"),)),
        CatalogVerdict.STALE,
        "unknown_tool_called",
    ),
    (
        "missing-required",
        "missing_required_argument",
        catalog(tool_calls=(ToolCallCheck(name="a", argument_names=("y",)),)),
        CatalogVerdict.STALE,
        "missing_required_argument",
    ),
    ("converged", "converged", catalog(), CatalogVerdict.CONVERGED, "ok"),
    (
        "converged-signal-strictly-before",
        "converged",
        catalog(notifications=(T0 + 10 * S - 1,), client_tools=(B, A)),
        CatalogVerdict.CONVERGED,
        "ok",
    ),
    (
        "converged-silent-within-policy",
        "converged",
        catalog(list_changed=False, refresh_policy=POLICY_60, now=T0 + 71 * S),
        CatalogVerdict.CONVERGED,
        "ok",
    ),
    (
        "converged-required-sent",
        "converged",
        catalog(tool_calls=(ToolCallCheck(name="a", argument_names=("x", "y")),)),
        CatalogVerdict.CONVERGED,
        "ok",
    ),
    (
        "converged-from-digests-only",
        "converged",
        catalog(
            discoveries=(
                disc(
                    10, 11, Page(next_cursor="h1"), Page(cursor="h1"), digest=digest_tools([A, B])
                ),
            )
        ),
        CatalogVerdict.CONVERGED,
        "ok",
    ),
]


@pytest.mark.parametrize(
    ("rule", "evidence", "verdict", "reason"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_rule_rows(
    rule: str, evidence: CatalogEvidence, verdict: CatalogVerdict, reason: str
) -> None:
    result = classify_catalog(evidence)
    assert (result.rule, result.verdict, result.reason) == (rule, verdict, reason)


def test_every_rule_row_is_exercised() -> None:
    assert {c[1] for c in CASES} == {rule.name for rule in CATALOG_RULES}


@pytest.mark.parametrize(
    ("verdict", "action"),
    [
        (CatalogVerdict.CONVERGED, NextAction.NONE),
        (CatalogVerdict.STALE, NextAction.BOUNDED_REDISCOVERY),
        (CatalogVerdict.UNVERIFIABLE, NextAction.BOUNDED_REDISCOVERY),
        (CatalogVerdict.INCOMPLETE, NextAction.RESUME_DISCOVERY),
    ],
)
def test_next_action_follows_the_verdict(verdict: CatalogVerdict, action: NextAction) -> None:
    results = [classify_catalog(c[2]) for c in CASES if c[3] is verdict]
    assert results
    assert {r.next_action for r in results} == {action}


def test_digests_and_client_source_are_reported() -> None:
    default = classify_catalog(catalog())
    assert default.client_source is ClientSource.DISCOVERY_RESULT
    assert default.discovered_digest == default.client_digest == digest_tools([A, B])
    registered = classify_catalog(catalog(client_tools=(A,)))
    assert registered.client_source is ClientSource.REGISTERED
    assert registered.client_digest == digest_tools([A])


def test_discovered_digest_is_the_last_complete_traversal() -> None:
    later = disc(30, None, page(None, "c1", A))
    result = classify_catalog(catalog(discoveries=(FULL, later)))
    assert result.verdict is CatalogVerdict.INCOMPLETE
    assert result.discovered_digest == digest_tools([A, B])


def test_no_complete_discovery_has_no_digest() -> None:
    result = classify_catalog(catalog(discoveries=(disc(10, None, page(None, "c1", A)),)))
    assert result.discovered_digest is None
