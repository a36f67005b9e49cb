"""The approval counter (``mcp_health.catalog.approvals``): one count per complete discovery that
carries an approval, labelled with the verdict, its reason and the server, and nothing else.

Real SDK spans go through the real processor (``Pipeline``); the approval attributes are the ones
the instrumentation writes on the page that completes a discovery (docs/attributes.md). The
end-to-end path (instrumented client, real servers, pins, collector, Prometheus, Alertmanager) is
``tests/pipeline/test_approval_alert.py``.
"""

from __future__ import annotations

from typing import Any

from tests.support.processor_helpers import Pipeline, SessionSpans

from otel_mcp_health import attributes as A
from otel_mcp_health.core.bounds import MAX_LABEL_VALUES, MAX_NAME_LENGTH, OVERFLOW
from otel_mcp_health.core.reasons import ApprovalReason
from otel_mcp_health.core.vocabulary import ApprovalVerdict

DESCRIPTION_CANARY = "canary-approval-description-5d1e07"
#: Every key a point of the counter may carry: the verdict, its reason, the server label.
ALLOWED_LABELS = {
    A.CATALOG_APPROVAL,
    A.CATALOG_APPROVAL_REASON,
    A.SERVER_ADDRESS,
    A.SERVER_PORT,
    A.SERVER_NAME,
}


def _approval(
    verdict: ApprovalVerdict, reason: ApprovalReason | None, **names: Any
) -> dict[str, Any]:
    """The approval attributes of a complete discovery, as the instrumentation writes them."""
    attrs: dict[str, Any] = {
        A.CATALOG_APPROVAL: verdict.value,
        A.CATALOG_APPROVAL_MATERIAL_COUNT: len(names.get("material", ())),
        A.CATALOG_APPROVAL_COSMETIC_COUNT: len(names.get("cosmetic", ())),
        A.CATALOG_APPROVAL_ADDED_COUNT: len(names.get("added", ())),
        A.CATALOG_APPROVAL_REMOVED_COUNT: len(names.get("removed", ())),
        A.CATALOG_APPROVAL_MATERIAL_TOOLS: list(names.get("material", ())),
        A.CATALOG_APPROVAL_COSMETIC_TOOLS: list(names.get("cosmetic", ())),
        A.CATALOG_APPROVAL_ADDED_TOOLS: list(names.get("added", ())),
        A.CATALOG_APPROVAL_REMOVED_TOOLS: list(names.get("removed", ())),
        A.CATALOG_APPROVAL_CHANGED_MEMBERS: list(names.get("members", ())),
    }
    if reason is not None:
        attrs[A.CATALOG_APPROVAL_REASON] = reason.value
    return attrs


def _points(pipeline: Pipeline) -> list[dict[str, Any]]:
    return [
        {**point["attributes"], "value": point["value"]}
        for point in pipeline.metric_points(A.METRIC_CATALOG_APPROVALS)
    ]


def test_each_complete_discovery_with_an_approval_counts_once_per_verdict(
    pipeline: Pipeline,
) -> None:
    drifted = SessionSpans(pipeline.tracer, key="s-drifted", server=("docs.example.test", 443))
    drifted.handshake()
    material = _approval(
        ApprovalVerdict.DRIFTED,
        ApprovalReason.MATERIAL_CHANGE,
        material=["search"],
        members=["description"],
    )
    drifted.traversal([(None, "c1"), ("c1", None)], start=-60, **material)
    drifted.traversal([(None, None)], start=-30, **material)  # discovered again: still drifted
    cosmetic = SessionSpans(pipeline.tracer, key="s-titles", server=("titles.example.test", 443))
    cosmetic.handshake()
    approved = _approval(
        ApprovalVerdict.APPROVED, None, cosmetic=["report"], removed=["archive"], members=["title"]
    )
    cosmetic.traversal([(None, None)], start=-50, **approved)
    other = SessionSpans(pipeline.tracer, key="s-other", server=("other.example.test", 8443))
    other.handshake()
    unpinned = _approval(ApprovalVerdict.UNPINNED, ApprovalReason.NO_MATCHING_PINS)
    other.traversal([(None, None)], start=-40, **unpinned)

    points = {
        (p[A.SERVER_ADDRESS], p[A.CATALOG_APPROVAL], p.get(A.CATALOG_APPROVAL_REASON)): p["value"]
        for p in _points(pipeline)
    }
    assert points == {
        ("docs.example.test", "drifted", "material_change"): 2,
        ("titles.example.test", "approved", None): 1,  # a cosmetic change stays approved
        ("other.example.test", "unpinned", "no_matching_pins"): 1,
    }
    ports = {p[A.SERVER_ADDRESS]: p[A.SERVER_PORT] for p in _points(pipeline)}
    assert ports == {
        "docs.example.test": 443,
        "titles.example.test": 443,
        "other.example.test": 8443,
    }
    # The discovery span keeps what the reviewer needs; the metric only the verdict and reason.
    final = pipeline.named("tools/list")[1].attributes or {}
    assert final[A.CATALOG_APPROVAL_MATERIAL_TOOLS] == ("search",)


def test_no_approval_counts_nothing(pipeline: Pipeline) -> None:
    """No pins configured (no approval attribute), the pages before the last, or an internal
    list: the counter has no point at all."""
    spans = SessionSpans(pipeline.tracer)
    spans.handshake()
    spans.traversal([(None, "c1"), ("c1", None)], start=-60)
    spans.traversal([(None, None)], start=-30, internal=True)
    assert pipeline.counts(A.METRIC_CATALOG_VERDICTS, A.CATALOG_VERDICT) == {"converged": 1}
    assert _points(pipeline) == []


def test_labels_are_vocabulary_and_the_server_label_only(pipeline: Pipeline) -> None:
    """A value outside the vocabulary (an application can write on the span too) is no label;
    tool names, members and a description written beside the approval never become one."""
    spans = SessionSpans(pipeline.tracer)
    spans.handshake()
    hostile = _approval(
        ApprovalVerdict.DRIFTED,
        ApprovalReason.TOOL_ADDED,
        added=[f"tool {DESCRIPTION_CANARY}"],
        members=["description"],
    )
    spans.traversal([(None, None)], start=-60, **hostile)
    spans.traversal(
        [(None, None)],
        start=-50,
        **{**hostile, A.CATALOG_APPROVAL_REASON: DESCRIPTION_CANARY},
    )
    spans.traversal(
        [(None, None)], start=-40, **{**hostile, A.CATALOG_APPROVAL: DESCRIPTION_CANARY}
    )
    points = _points(pipeline)
    counted = {
        (p[A.CATALOG_APPROVAL], p.get(A.CATALOG_APPROVAL_REASON)): p["value"] for p in points
    }
    # the bogus reason is left out (the verdict still counts); the bogus verdict counts nothing
    assert counted == {("drifted", "tool_added"): 1, ("drifted", None): 1}
    for point in points:
        assert set(point) - {"value"} <= ALLOWED_LABELS
        assert DESCRIPTION_CANARY not in repr(point)


def test_a_session_without_a_network_server_counts_under_its_announced_name(
    pipeline: Pipeline,
) -> None:
    """stdio and in-process servers have no address: the label is the name they announced."""
    spans = SessionSpans(pipeline.tracer, network=None)
    spans.handshake(**{A.SERVER_NAME: "reviewed-docs"})
    spans.traversal(
        [(None, None)],
        start=-10,
        **_approval(ApprovalVerdict.DRIFTED, ApprovalReason.MATERIAL_CHANGE, material=["search"]),
    )
    (point,) = _points(pipeline)
    assert point[A.SERVER_NAME] == "reviewed-docs"
    assert A.SERVER_ADDRESS not in point


def test_server_labels_take_a_bounded_number_of_values(pipeline: Pipeline) -> None:
    """Server names are server-chosen: capped, and beyond the budget folded into the overflow
    value, like every open label of the processor's counters (docs/attributes.md#bounds)."""
    drifted = _approval(ApprovalVerdict.DRIFTED, ApprovalReason.TOOL_ADDED, added=["upload"])
    servers = MAX_LABEL_VALUES + 20
    for i in range(servers):
        spans = SessionSpans(pipeline.tracer, key=f"s{i}", network=None)
        spans.handshake(**{A.SERVER_NAME: f"server-{i}-" + "x" * 300})
        spans.traversal([(None, None)], start=-10, **drifted)
    counts = pipeline.counts(A.METRIC_CATALOG_APPROVALS, A.SERVER_NAME)
    assert len(counts) == MAX_LABEL_VALUES + 1
    assert counts[OVERFLOW] == 20
    assert sum(counts.values()) == servers
    assert max(len(name) for name in counts) <= MAX_NAME_LENGTH
