"""Subset installs (docs/model.md#catalog): per-tool digests and the one install comparison.

An agent may offer its model fewer tools than the server lists (tool filters). The install is
judged tool by tool: per-tool digests over the v1 projection of one tool (the same bytes the
catalog digest joins, checked here against the ``rfc8785`` package), and one comparison that the
span path and the offline classifier share.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_mcp_health.core.catalog import classify_catalog
from otel_mcp_health.core.digest import (
    PROJECTED_MEMBERS,
    CatalogDigester,
    catalog_bytes,
    tool_digests,
)
from otel_mcp_health.core.evidence import CatalogEvidence, Discovery, InstallCheck, Page
from otel_mcp_health.core.install import compare_install, install_reason
from otel_mcp_health.core.vocabulary import CatalogVerdict

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "digest"


def _reference(tool: dict[str, Any]) -> str:
    """One tool's digest spelled out with the rfc8785 package (none of our canonicalizer)."""
    projected = {key: tool[key] for key in PROJECTED_MEMBERS if key in tool}
    return "sha256:" + hashlib.sha256(rfc8785.dumps(projected)).hexdigest()


def _vector_tools() -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for path in sorted(VECTORS.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        if "error" not in case and path.stem != "duplicate_names":
            tools.extend(case["tools"])
    return tools


@pytest.mark.parametrize("cached", [True, False])
def test_per_tool_digests_equal_rfc8785_on_every_vector(cached: bool) -> None:
    digester = CatalogDigester() if cached else CatalogDigester(max_tools=0)
    for tool in _vector_tools():
        assert digester.tool_digests([tool]) == {tool["name"]: _reference(tool)}


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_TOOL = st.fixed_dictionaries(
    {"name": st.text(min_size=1, max_size=6)},
    optional={"description": st.text(max_size=12), "inputSchema": _JSON, "_meta": _JSON},
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_TOOL, max_size=6, unique_by=lambda t: t["name"]))
def test_per_tool_digests_and_the_catalog_share_one_canonicalization(
    tools: list[dict[str, Any]],
) -> None:
    digests = CatalogDigester().tool_digests(tools)
    assert digests == {tool["name"]: _reference(tool) for tool in tools}
    # the catalog's bytes are the per-tool bytes joined in name order
    parts = [rfc8785.dumps({k: t[k] for k in PROJECTED_MEMBERS if k in t}) for t in tools]
    ordered = [p for _, p in sorted(zip([t["name"] for t in tools], parts, strict=True))]
    assert catalog_bytes(tools) == b"[" + b",".join(ordered) + b"]"


def test_a_warm_catalog_returns_its_per_tool_digests_unchanged() -> None:
    digester = CatalogDigester()
    tools = [{"name": "a", "description": "x"}, {"name": "b"}]
    digester.digest(tools)
    first = digester.tool_digests(tools)
    first["a"] = "tampered"  # a caller's copy: the remembered map stays intact
    assert digester.tool_digests(tools) == {t["name"]: _reference(t) for t in tools}


A = {"name": "a", "description": "reads"}
B = {"name": "b", "inputSchema": {"type": "object", "required": ["x"]}}
C = {"name": "c"}


def _check(installed: list[dict[str, Any]], discovered: list[dict[str, Any]]) -> InstallCheck:
    return compare_install(
        tool_digests(installed), tool_digests(discovered), discovery_digest="sha256:d"
    )


@pytest.mark.parametrize(
    ("installed", "reason", "changed", "unlisted"),
    [
        ([A, B, C], None, (), ()),
        ([A], None, (), ()),  # a subset of equal definitions matches
        ([{**A, "_meta": {"x": 1}}], None, (), ()),  # outside the projection
        ([{**B, "inputSchema": {"type": "object"}}], "digest_mismatch", ("b",), ()),
        ([A, {"name": "gone"}], "installed_tool_unlisted", (), ("gone",)),
        ([{**A, "title": "t"}, {"name": "z"}], "installed_tool_unlisted", ("a",), ("z",)),
        ([], "nothing_installed", (), ()),
    ],
)
def test_the_comparison_says_which_tools_differ(
    installed: list[dict[str, Any]],
    reason: str | None,
    changed: tuple[str, ...],
    unlisted: tuple[str, ...],
) -> None:
    check = _check(installed, [A, B, C])
    assert (check.installed, check.discovered) == (len(installed), 3)
    assert (check.changed, check.unlisted) == (changed, unlisted)
    assert install_reason(check, "sha256:d") == reason


def test_nothing_installed_of_nothing_discovered_matches() -> None:
    assert install_reason(_check([], []), "sha256:d") is None


def test_a_comparison_with_another_discovery_is_a_digest_mismatch() -> None:
    assert install_reason(_check([A], [A, B, C]), "sha256:later") == "digest_mismatch"


def _offline(client_tools: tuple[dict[str, Any], ...]) -> tuple[CatalogVerdict, str]:
    discovery = Discovery(started_at=1, completed_at=2, pages=(Page(tools=(A, B, C)),))
    evidence = CatalogEvidence(
        list_changed=True, now=3, discoveries=(discovery,), client_tools=client_tools
    )
    result = classify_catalog(evidence)
    return result.verdict, result.reason


def test_the_offline_classifier_judges_subsets_by_the_same_comparison() -> None:
    assert _offline((A, C)) == (CatalogVerdict.CONVERGED, "ok")
    assert _offline((A, {"name": "gone"})) == (CatalogVerdict.STALE, "installed_tool_unlisted")
    assert _offline(()) == (CatalogVerdict.STALE, "nothing_installed")
    assert _offline(({**C, "description": "new"},)) == (CatalogVerdict.STALE, "digest_mismatch")


def test_an_install_span_compared_with_an_older_discovery_is_stale() -> None:
    discovery = Discovery(started_at=1, completed_at=2, digest="sha256:new")
    install = InstallCheck(installed=1, discovered=3, discovery_digest="sha256:old")
    evidence = CatalogEvidence(
        list_changed=True,
        now=3,
        discoveries=(discovery,),
        client_digest="sha256:subset",
        install=install,
    )
    result = classify_catalog(evidence)
    assert (result.verdict, result.reason) == (CatalogVerdict.STALE, "digest_mismatch")
    same = CatalogEvidence(
        list_changed=True,
        now=3,
        discoveries=(discovery,),
        client_digest="sha256:subset",
        install=InstallCheck(installed=1, discovered=3, discovery_digest="sha256:new"),
    )
    assert classify_catalog(same).verdict is CatalogVerdict.CONVERGED
