"""The dump of a run's exported telemetry, with only the per-run values masked.

Everything the exporter and the metric reader received is kept: each span's name, kind, status,
attributes in their order with their value types, events, link count, parent (as the index of the
parent span in the dump), instrumentation scope; each metric point's name, unit, description,
attributes and value. What differs from one run of the same code to the next is replaced by a
placeholder, and nothing else:

* ids and timestamps are left out (the parent relation is kept as an index);
* ephemeral ports and temporary paths, wherever they appear;
* keyed hashes (the process-local key changes per process) and server-assigned session ids:
  the same raw value gets the same numbered placeholder within one dump, so "these two spans
  carry the same session" survives the masking;
* durations and other clock readings (span attributes, histogram sums and buckets of seconds);
* the versions of this package and of ``mcp`` in instrumentation scopes, and the installed SDK's
  newest protocol version wherever it appears (a release of either would otherwise change the
  dump without changing what this package exports).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from otel_mcp_health import attributes as A

#: The installed SDK's newest protocol version (what a session negotiates with the reference
#: server): a minor release of the line may move it without anything of ours changing.
LATEST_PROTOCOL: str = importlib.import_module("mcp.types").LATEST_PROTOCOL_VERSION

#: Attributes whose value is a keyed hash or a server-assigned id: numbered placeholders.
KEYED = frozenset(
    {
        A.SESSION_KEY,
        A.SERVER_TARGET_KEY,
        A.INCIDENT_KEY,
        A.MCP_SESSION_ID,
        A.CATALOG_PAGE_CURSOR_HASH,
        A.CATALOG_PAGE_NEXT_CURSOR_HASH,
    }
)
#: Attributes whose value is a clock reading: masked, their type kept.
TIMED = frozenset({A.OUTCOME_DURATION_S, A.PROGRESS_MAX_GAP_S, A.CATALOG_INHERITED_AGE_S})


@dataclass
class Masks:
    """The per-run values of one run, and the placeholders given so far."""

    ports: Sequence[int]
    paths: Sequence[str]
    seen: dict[tuple[str, Any], str] = field(default_factory=dict)

    def keyed(self, kind: str, raw: Any) -> str:
        """The placeholder of ``raw``: the same one every time within this dump."""
        found = self.seen.get((kind, raw))
        if found is None:
            count = sum(1 for k, _ in self.seen if k == kind)
            found = self.seen[(kind, raw)] = f"<{kind}#{count + 1}>"
        return found

    def text(self, value: str) -> str:
        if value == LATEST_PROTOCOL:
            return "<sdk-latest-protocol>"
        for path in self.paths:
            value = value.replace(path, "<path>")
        for index, port in enumerate(self.ports):
            value = value.replace(f":{port}", f":<port{index}>")
        return value

    def value(self, key: str, value: Any) -> Any:
        if key in KEYED:
            return self.keyed(key, value)
        if key in TIMED:
            return "<time>"
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in self.ports:
            return f"<port{list(self.ports).index(value)}>"
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, tuple | list):
            return [self.value(key, item) for item in value]
        return value


def _type(value: Any) -> str:
    if isinstance(value, tuple | list):
        inner = sorted({type(item).__name__ for item in value})
        return f"{type(value).__name__}[{'|'.join(inner)}]"
    return type(value).__name__


def _attributes(attributes: Any, masks: Masks) -> list[list[Any]]:
    """``[key, type, value]`` in the order the attributes were set."""
    return [[k, _type(v), masks.value(k, v)] for k, v in (attributes or {}).items()]


def _scope(span: ReadableSpan) -> list[Any]:
    scope = span.instrumentation_scope
    if scope is None:
        return []
    known = {version("otel-mcp-health"): "<ours>", version("mcp"): "<mcp>"}
    return [scope.name, known.get(scope.version or "", scope.version), scope.schema_url]


def spans(exported: Sequence[ReadableSpan], masks: Masks) -> list[dict[str, Any]]:
    index = {span.context.span_id: i for i, span in enumerate(exported) if span.context}
    out = []
    for span in exported:
        parent: Any = None
        if span.parent is not None:
            parent = index.get(span.parent.span_id, "outside")
        out.append(
            {
                "name": masks.text(span.name),
                "kind": span.kind.name,
                "status": [span.status.status_code.name, span.status.description],
                "parent": parent,
                "scope": _scope(span),
                "attributes": _attributes(span.attributes, masks),
                "events": [[e.name, _attributes(e.attributes, masks)] for e in span.events],
                "links": len(span.links),
            }
        )
    return out


def metrics(pipeline: Any, masks: Masks) -> list[dict[str, Any]]:
    data = pipeline.reader.get_metrics_data()
    out: list[dict[str, Any]] = []
    if data is None:
        return out
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                kind = type(metric.data).__name__
                timed = kind == "Histogram" and metric.unit == "s"
                points = []
                for point in metric.data.data_points:
                    shown: Any
                    if kind == "Histogram":
                        shown = {"count": point.count}
                        if not timed:
                            shown.update(
                                sum=point.sum,
                                buckets=list(point.bucket_counts),
                                bounds=list(point.explicit_bounds),
                            )
                    else:
                        shown = point.value
                    attrs = _attributes(point.attributes, masks)
                    points.append({"attributes": attrs, "value": shown})
                points.sort(key=lambda p: json.dumps(p["attributes"]))
                out.append(
                    {
                        "scope": sm.scope.name,
                        "name": metric.name,
                        "kind": kind,
                        "unit": metric.unit,
                        "description": metric.description,
                        "points": points,
                    }
                )
    out.sort(key=lambda m: (m["scope"], m["name"]))
    return out


def dump(pipeline: Any, records: Sequence[tuple[str, str, str]], masks: Masks) -> dict[str, Any]:
    """The run's spans (in export order), metrics (by scope and name) and log records."""
    return {
        "spans": spans(pipeline.spans(), masks),
        "metrics": metrics(pipeline, masks),
        "logs": [[name, level, masks.text(message)] for name, level, message in records],
    }


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _attribute_lines(attributes: list[list[Any]], indent: str) -> list[str]:
    return [f"{indent}{key} {kind} {_value(value)}" for key, kind, value in attributes]


def render(dumped: dict[str, Any]) -> str:
    """The dump as text, one attribute, event, point or record per line (a readable diff)."""
    lines: list[str] = []
    for index, span in enumerate(dumped["spans"]):
        status, description = span["status"]
        lines.append(
            f"span {index}: {_value(span['name'])} {span['kind']} parent={span['parent']}"
            f" status={status} {_value(description)} scope={_value(span['scope'])}"
            f" links={span['links']}"
        )
        lines += _attribute_lines(span["attributes"], "  ")
        for name, attributes in span["events"]:
            lines.append(f"  event {_value(name)}")
            lines += _attribute_lines(attributes, "    ")
    for metric in dumped["metrics"]:
        lines.append(
            f"metric {metric['name']} {metric['kind']} unit={_value(metric['unit'])}"
            f" scope={metric['scope']} {_value(metric['description'])}"
        )
        for point in metric["points"]:
            lines.append(f"  point {_value(point['value'])}")
            lines += _attribute_lines(point["attributes"], "    ")
    for name, level, message in dumped["logs"]:
        lines.append(f"log {name} {level} {_value(message)}")
    return "\n".join(lines) + "\n"
