"""A probe's result as Prometheus series (text exposition format 0.0.4), and as plain samples.

Series names follow the blackbox exporter where it has one (``probe_success``,
``probe_duration_seconds``) and the product's families otherwise (``mcp_health_probe_*``); label
names are the product's attribute names with ``.`` written ``_``, so one alert reads the agent
side's span metrics and a probe's series alike. Every label value is a vocabulary value, a reason
code, a tool or server name the server announced, a digest or a method name: never an argument, a
header, a URL or a command line. docs/probe.md lists every series.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from otel_mcp_health import attributes as A
from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.vocabulary import FirstFailedLayer

#: Every family: (name, type, help). Their order is the answer's order.
FAMILIES: Final[tuple[tuple[str, str, str], ...]] = (
    (A.METRIC_PROBE_SUCCESS, "gauge", "1 if the probe's verdict is healthy or converged, else 0."),
    (A.METRIC_PROBE_DURATION, "gauge", "How long the probe took."),
    (
        A.METRIC_PROBE_PHASE_DURATION,
        "gauge",
        "Time of each phase the probe reached (handshake, discovery, call).",
    ),
    (A.METRIC_PROBE_VERDICT, "gauge", "The probe's verdict, reason and first failed layer."),
    (
        A.METRIC_PROBE_SESSION_VERDICT,
        "gauge",
        "The session's verdict: the failed handshake's, else the readiness of its catalog.",
    ),
    (A.METRIC_PROBE_CATALOG_VERDICT, "gauge", "The catalog convergence verdict."),
    (
        A.METRIC_PROBE_CATALOG_APPROVAL,
        "gauge",
        "The catalog's approval against the pins (only when pins are configured).",
    ),
    (A.METRIC_PROBE_CATALOG_TOOLS, "gauge", "Tools the server listed."),
    (A.METRIC_PROBE_CATALOG_PAGES, "gauge", "tools/list pages the probe requested."),
    (
        A.METRIC_PROBE_CATALOG_INFO,
        "gauge",
        "The catalog's digest and the session's identity (always 1).",
    ),
    (A.METRIC_PROBE_CALL_VERDICT, "gauge", "The canary call's verdict (when one ran)."),
    (A.METRIC_PROBE_REQUESTS, "gauge", "JSON-RPC messages the probe sent, by method."),
    (A.METRIC_PROBE_CACHED, "gauge", "1 if this answer is a cached result."),
    (A.METRIC_PROBE_AGE, "gauge", "Age of the result answered."),
)
PHASE: Final = "phase"
#: The approval's labels: the names the judged discovery span carries.
CATALOG_APPROVAL: Final = A.CATALOG_APPROVAL
CATALOG_APPROVAL_REASON: Final = A.CATALOG_APPROVAL_REASON


@dataclass(frozen=True, slots=True)
class Sample:
    """One sample: family name, labels (attribute names, dotted) and value."""

    name: str
    labels: Mapping[str, str]
    value: float


def label_name(attribute: str) -> str:
    """The Prometheus label of an attribute (``mcp_health.verdict`` → ``mcp_health_verdict``)."""
    return attribute.replace(".", "_")


def _labels(pairs: Mapping[str, Any]) -> dict[str, str]:
    """Label values, each capped (a server chooses its name and version strings)."""
    return {k: cap(str(v)) for k, v in pairs.items() if v is not None}


def _one(name: str, labels: Mapping[str, Any]) -> Sample:
    """A state series: value 1, the state in its labels."""
    return Sample(name, _labels(labels), 1)


def _verdicts(report: Mapping[str, Any]) -> Iterable[Sample]:
    """The probe's verdict and the session's."""
    session, call = report["session"], report.get("call")
    layer = (call or session).get("firstFailedLayer") or FirstFailedLayer.NONE.value
    yield _one(
        A.METRIC_PROBE_VERDICT,
        {
            A.VERDICT: report["verdict"],
            A.REASON: report["reason"],
            A.NEXT_ACTION: report["nextAction"],
            A.CALL_FIRST_FAILED_LAYER: layer,
        },
    )
    if "verdict" in session:
        verdict, reason = session["verdict"], session["reason"]
        session_layer = session.get("firstFailedLayer") or FirstFailedLayer.NONE.value
    else:
        (verdict, reason), session_layer = report["sessionVerdict"], FirstFailedLayer.NONE.value
    yield _one(
        A.METRIC_PROBE_SESSION_VERDICT,
        {A.VERDICT: verdict, A.REASON: reason, A.CALL_FIRST_FAILED_LAYER: session_layer},
    )


def _call(call: Mapping[str, Any] | None) -> Iterable[Sample]:
    """The canary call's verdict, when one ran."""
    if call is None:
        return
    yield _one(
        A.METRIC_PROBE_CALL_VERDICT,
        {
            A.GEN_AI_TOOL_NAME: call["tool"],
            A.VERDICT: call["verdict"],
            A.REASON: call["reason"],
            A.CALL_FIRST_FAILED_LAYER: call.get("firstFailedLayer"),
            A.OUTCOME_METHOD: call.get("outcomeMethod"),
        },
    )


def _catalog(report: Mapping[str, Any], approval: Mapping[str, Any] | None) -> Iterable[Sample]:
    """The catalog's verdict, approval (with pins), size and identity."""
    session, catalog = report["session"], report["catalog"]
    yield _one(
        A.METRIC_PROBE_CATALOG_VERDICT,
        {A.CATALOG_VERDICT: catalog["verdict"], A.CATALOG_REASON: catalog["reason"]},
    )
    if approval is not None:
        reason = approval.get("reason") or ""
        yield _one(
            A.METRIC_PROBE_CATALOG_APPROVAL,
            {CATALOG_APPROVAL: approval["verdict"], CATALOG_APPROVAL_REASON: reason},
        )
    yield Sample(A.METRIC_PROBE_CATALOG_TOOLS, {}, catalog["toolCount"])
    yield Sample(A.METRIC_PROBE_CATALOG_PAGES, {}, catalog["pages"])
    yield _one(
        A.METRIC_PROBE_CATALOG_INFO,
        {
            A.CATALOG_DIGEST: catalog.get("digest"),
            A.SERVER_NAME: session.get("serverName"),
            A.MCP_PROTOCOL_VERSION: session.get("protocolVersion"),
            A.SESSION_ERA: session.get("era"),
            A.NETWORK_TRANSPORT: session.get("transport"),
        },
    )


def samples(
    report: Mapping[str, Any],
    *,
    duration_s: float,
    phases: Mapping[str, float],
    requests: Mapping[str, int],
    approval: Mapping[str, Any] | None,
    cached: bool,
    age_s: float,
) -> list[Sample]:
    """Every sample of one probe's answer (family order as :data:`FAMILIES`)."""
    out = [
        Sample(A.METRIC_PROBE_SUCCESS, {}, 1 if report["success"] else 0),
        Sample(A.METRIC_PROBE_DURATION, {}, duration_s),
    ]
    out += [
        Sample(A.METRIC_PROBE_PHASE_DURATION, {PHASE: phase}, seconds)
        for phase, seconds in phases.items()
    ]
    out += _verdicts(report)
    out += _catalog(report, approval)
    out += _call(report.get("call"))
    out += [
        Sample(A.METRIC_PROBE_REQUESTS, {A.MCP_METHOD_NAME: method}, count)
        for method, count in sorted(requests.items())
    ]
    out += [
        Sample(A.METRIC_PROBE_CACHED, {}, 1 if cached else 0),
        Sample(A.METRIC_PROBE_AGE, {}, age_s),
    ]
    return out


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


def exposition(found: Sequence[Sample], families: Sequence[tuple[str, str, str]]) -> str:
    """Prometheus text format: ``# HELP``/``# TYPE`` once per family that has samples."""
    by_family: dict[str, list[Sample]] = {}
    for sample in found:
        by_family.setdefault(sample.name, []).append(sample)
    lines: list[str] = []
    for name, kind, help_text in families:
        members = by_family.get(name)
        if not members:
            continue
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        for sample in members:
            pairs = ",".join(
                f'{label_name(k)}="{_escape(v)}"' for k, v in sorted(sample.labels.items())
            )
            series = f"{sample.name}{{{pairs}}}" if pairs else sample.name
            lines.append(f"{series} {_number(sample.value)}")
    return "\n".join(lines) + "\n"
