"""Helpers of the integration suite (the fixtures live in ``conftest.py``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

HERE = Path(__file__).parent
STDIO_SERVER = HERE / "stdio_server.py"


@dataclass
class Captured:
    """Our exported telemetry, one test's worth."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    sdk_exporter: InMemorySpanExporter
    provider: TracerProvider
    started: list[Span]

    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def client_spans(self) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.kind is SpanKind.CLIENT]

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, (name, [s.name for s in self.spans()])
        return found[0]

    def sdk_client_spans(self) -> list[ReadableSpan]:
        return [s for s in self.sdk_exporter.get_finished_spans() if s.kind is SpanKind.CLIENT]

    def exported_bytes(self) -> bytes:
        """Every exported span (attributes, events, status, links) and metric, serialized."""
        parts = [s.to_json() for s in self.spans()]
        data = self.reader.get_metrics_data()
        if data is not None:
            parts.append(data.to_json())
        return "\n".join(parts).encode()

    def metric_points(self, name: str) -> list[dict[str, Any]]:
        data = self.reader.get_metrics_data()
        if data is None:
            return []
        payload = json.loads(data.to_json())
        points: list[dict[str, Any]] = []
        for rm in payload["resource_metrics"]:
            for sm in rm["scope_metrics"]:
                for metric in sm["metrics"]:
                    if metric["name"] == name:
                        points.extend(metric["data"]["data_points"])
        return points


def attribute_types(span: ReadableSpan) -> dict[str, type]:
    """``{key: type(value)}`` of a span's attributes (tuples for sequences)."""
    return {key: type(value) for key, value in (span.attributes or {}).items()}


def names(spans: Sequence[ReadableSpan]) -> list[str]:
    return [s.name for s in spans]
