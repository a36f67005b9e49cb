"""The demo's report: the table of verdicts read back from the exported spans, and the check of
every scenario against the verdicts it must get."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TextIO

from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan

from otel_mcp_health import attributes as A
from otel_mcp_health.core.calls import Rates
from otel_mcp_health.core.vocabulary import OUTCOME_NOT_REQUIRED, TOOLS_CALL
from otel_mcp_health.demo._scenarios import SCENARIO_ATTRIBUTE, Scenario

EXIT_OK: Final = 0
EXIT_MISMATCH: Final = 1

#: Printed under the table; every line fits in 100 columns (tests/test_readme.py checks it).
LEGEND: Final = "\n".join(
    (
        "legend: verdict = the session contract's verdict on the exported span (docs/model.md)",
        "        first failed = first failing layer, in the order transport > authorization >",
        "        protocol > execution > outcome; protocol-level success counts result envelopes",
        "        (isError included); verified outcomes counts passing verifier receipts (the",
        "        not_required policy is not a receipt)",
        "        incidents opened counts incidents, not verdicts: calls failing the same way",
        "        (service + server + first failed layer + reason, docs/model.md#incidents) are one",
        "        incident, so the two in-process stale_catalog calls make one; healthy, unverified",
        "        and working open none",
    )
)


@dataclass(frozen=True, slots=True)
class Row:
    """One exported MCP span and its verdict (session contract, or catalog for catalog rows)."""

    scenario: str
    span: str
    verdict: str
    first_failed: str
    next_action: str
    reason: str


def _label_of(
    span: ReadableSpan, by_id: Mapping[int, ReadableSpan], steps: Sequence[ReadableSpan]
) -> str:
    """The scenario of ``span``: its nearest demo ancestor, else the step running when it began.

    A notification is handled by the session's receive loop, outside any step's context; the step
    whose time span holds its arrival is the one that caused it (steps run one after the other).
    """
    current = by_id.get(span.parent.span_id) if span.parent else None
    while current is not None:
        label = (current.attributes or {}).get(SCENARIO_ATTRIBUTE)
        if isinstance(label, str):
            return label
        current = by_id.get(current.parent.span_id) if current.parent else None
    started = span.start_time or 0
    for step in steps:
        same_trace = step.context.trace_id == span.context.trace_id
        if same_trace and (step.start_time or 0) <= started <= (step.end_time or 0):
            return str((step.attributes or {})[SCENARIO_ATTRIBUTE])
    return next(
        (
            str((s.attributes or {})[SCENARIO_ATTRIBUTE])
            for s in steps
            if s.parent is None and s.context.trace_id == span.context.trace_id
        ),
        "-",
    )


def _collect(spans: Sequence[ReadableSpan]) -> tuple[list[Row], list[Row]]:
    """The verdict rows and the catalog rows, in export order."""
    by_id = {s.context.span_id: s for s in spans}
    # Scenario steps first (they have a parent), then the session spans around them.
    labelled = [s for s in spans if SCENARIO_ATTRIBUTE in (s.attributes or {})]
    steps = sorted(labelled, key=lambda s: s.parent is None)
    verdicts: list[Row] = []
    catalogs: list[Row] = []
    for span in spans:
        attrs = span.attributes or {}
        label = _label_of(span, by_id, steps)
        if A.VERDICT in attrs:
            verdicts.append(_row(label, span, A.VERDICT, A.REASON, call=True))
        elif A.CATALOG_VERDICT in attrs:
            catalogs.append(_row(label, span, A.CATALOG_VERDICT, A.CATALOG_REASON, call=False))
    return verdicts, catalogs


def _row(scenario: str, span: ReadableSpan, verdict: str, reason: str, *, call: bool) -> Row:
    """The verdict and reason the span carries under these two attributes; a call row also has
    the first failed layer and the next action (a catalog row has neither: ``-``)."""
    attrs = span.attributes or {}
    return Row(
        scenario=scenario,
        span=span.name,
        verdict=str(attrs[verdict]),
        first_failed=str(attrs.get(A.CALL_FIRST_FAILED_LAYER, "-")) if call else "-",
        next_action=str(attrs.get(A.NEXT_ACTION, "-")) if call else "-",
        reason=str(attrs.get(reason, "-")),
    )


def _rates(spans: Sequence[ReadableSpan]) -> Rates:
    """Seed 003's two rates over the exported ``tools/call`` spans, from their layer statuses."""
    calls = envelopes = verified = 0
    for span in spans:
        attrs = span.attributes or {}
        if attrs.get(A.MCP_METHOD_NAME) != TOOLS_CALL or A.VERDICT not in attrs:
            continue
        calls += 1
        envelopes += attrs.get(A.layer_attribute("protocol")) == "passed"
        verified += (
            attrs.get(A.layer_attribute("outcome")) == "passed"
            and attrs.get(A.OUTCOME_METHOD) != OUTCOME_NOT_REQUIRED
        )
    return Rates(calls=calls, envelopes=envelopes, verified=verified)


def _incidents(reader: InMemoryMetricReader) -> Counter[str]:
    """Incidents opened, by verdict, from the processor's ``mcp_health.incidents`` counter."""
    opened: Counter[str] = Counter()
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != A.METRIC_INCIDENTS:
                    continue
                for point in metric.data.data_points:
                    if isinstance(point, NumberDataPoint):
                        opened[str((point.attributes or {}).get(A.VERDICT))] += int(point.value)
    return opened


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(line[i]) for line in (header, *rows)) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in (header, *rows)
    ]
    return "\n".join(lines) + "\n"


def _wrapped(head: str, items: Sequence[str], width: int = 100) -> str:
    """``head`` then the items two spaces apart, continued under the first item within ``width``."""
    lines, line = [], head
    for item in items:
        if line.strip() and len(line) + 2 + len(item) > width and line != head:
            lines.append(line)
            line = " " * len(head)
        line += item if line.endswith(" ") else "  " + item
    return "\n".join([*lines, line])


def _percent(part: int, whole: int) -> str:
    return f"{part / whole * 100:.1f} % ({part}/{whole})" if whole else "n/a"


def _mismatches(
    rows: Sequence[Row], errors: Mapping[str, str], scenarios: Sequence[Scenario]
) -> list[str]:
    problems = [f"{label}: session failed ({error})" for label, error in errors.items()]
    for scenario in scenarios:
        got = Counter((r.span, r.verdict) for r in rows if r.scenario == scenario.label)
        want = Counter(scenario.expected)
        if got != want:
            expected, actual = sorted(want.elements()), sorted(got.elements())
            problems.append(f"{scenario.label}: expected {expected}, got {actual}")
    return problems


def _verdict_table(verdicts: Sequence[Row], scenarios: Sequence[Scenario]) -> str:
    """One row per span with a verdict; a verdict its scenario does not expect is flagged."""
    expected = {s.label: {v for _, v in s.expected} for s in scenarios}
    return _table(
        ("scenario", "span", "verdict", "first failed", "next action", "reason", ""),
        [
            (
                r.scenario,
                r.span,
                r.verdict,
                r.first_failed,
                r.next_action,
                r.reason,
                "" if r.verdict in expected.get(r.scenario, ()) else "<-- UNEXPECTED",
            )
            for r in verdicts
        ],
    )


def _catalog_table(catalogs: Sequence[Row]) -> str:
    return "\ncatalog verdicts, on the spans that end a traversal or bring a signal:\n" + _table(
        ("scenario", "span", "catalog", "reason"),
        [(r.scenario, r.span, r.verdict, r.reason) for r in catalogs],
    )


def _rates_line(rates: Rates) -> str:
    return (
        f"\ncalls: {rates.calls}  protocol-level success: "
        f"{_percent(rates.envelopes, rates.calls)}  verified outcomes: "
        f"{_percent(rates.verified, rates.calls)}\n"
    )


def _incidents_line(incidents: Counter[str]) -> str:
    items = [f"{v} {n}" for v, n in sorted(incidents.items())] or ["none"]
    return _wrapped("incidents opened: ", items) + "\n"


def _conclusion(out: TextIO, problems: Sequence[str], summary: str) -> int:
    """Print the mismatches loudly (exit 1), or the ``summary`` of a run that got them all."""
    if problems:
        out.write(
            f"\nDEMO MISMATCH: {len(problems)} scenario(s) did not get the expected verdict\n"
        )
        out.writelines(f"  MISMATCH {problem}\n" for problem in problems)
        return EXIT_MISMATCH
    out.write(summary)
    return EXIT_OK


def report(
    out: TextIO,
    spans: Sequence[ReadableSpan],
    reader: InMemoryMetricReader,
    *,
    errors: Mapping[str, str],
    scenarios: Sequence[Scenario],
    elapsed_s: float,
) -> int:
    """Print the verdict table, the catalog verdicts, the two rates and the legend.

    ``errors`` are the sessions that failed (label: exception type); returns the exit code.
    """
    verdicts, catalogs = _collect(spans)
    out.write(_verdict_table(verdicts, scenarios))
    out.write(_catalog_table(catalogs))
    out.write(_rates_line(_rates(spans)))
    out.write(_incidents_line(_incidents(reader)))
    out.write(LEGEND + "\n")
    summary = (
        f"\nall {len(scenarios)} scenarios got their expected verdicts "
        f"({len(verdicts)} spans, {elapsed_s:.1f} s)\n"
    )
    return _conclusion(out, _mismatches(verdicts, errors, scenarios), summary)
