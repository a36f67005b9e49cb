"""Zero-code: ``opentelemetry-instrument`` + environment variables → verdicts at an OTLP receiver.

The application (``zero_code_app.py``) contains no telemetry code. It runs in a real subprocess
under ``opentelemetry-instrument`` with ``OTEL_PYTHON_CONFIGURATOR=mcp_health`` and exports
OTLP/HTTP (protobuf) to a receiver this test runs on 127.0.0.1, which decodes the real
``ExportTraceServiceRequest`` / ``ExportMetricsServiceRequest`` payloads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from otel_mcp_health import attributes as A

#: The repository root: the app runs there as ``python -m tests.processor.zero_code_app``.
ROOT = Path(__file__).resolve().parents[2]
APP = "tests.processor.zero_code_app"
INSTRUMENT = Path(sys.executable).parent / "opentelemetry-instrument"


@dataclass
class Received:
    """What the receiver decoded: spans as (name, attributes), metrics as name → point labels."""

    spans: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    metrics: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def _attributes(items: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in items}


def _handler(received: Received) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        """The OTLP/HTTP receiver: decodes each protobuf export request to ``/v1/traces`` and
        ``/v1/metrics`` into ``received`` and answers with an empty export response."""

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                with received.lock:
                    for rs in request.resource_spans:
                        for ss in rs.scope_spans:
                            received.spans.extend(
                                (s.name, _attributes(s.attributes)) for s in ss.spans
                            )
                reply = ExportTraceServiceResponse().SerializeToString()
            elif self.path == "/v1/metrics":
                request_m = ExportMetricsServiceRequest.FromString(body)
                with received.lock:
                    for rm in request_m.resource_metrics:
                        for sm in rm.scope_metrics:
                            for metric in sm.metrics:
                                data = getattr(metric, metric.WhichOneof("data"))
                                received.metrics.setdefault(metric.name, []).extend(
                                    _attributes(p.attributes) for p in data.data_points
                                )
                reply = ExportMetricsServiceResponse().SerializeToString()
            else:
                reply = b""
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def receiver() -> Iterator[tuple[str, Received]]:
    received = Received()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(received))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def test_opentelemetry_instrument_exports_verdicts(receiver: tuple[str, Received]) -> None:
    endpoint, received = receiver
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("OTEL_")  # only the documented variables below
    }
    env.update(
        {
            "OTEL_PYTHON_CONFIGURATOR": "mcp_health",
            "OTEL_SERVICE_NAME": "zero-code-agent",
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_METRICS_EXPORTER": "otlp",
            "OTEL_LOGS_EXPORTER": "none",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_INSTRUMENTATION_MCP_HEALTH_CATALOG_MAX_AGE_S": "120",
        }
    )
    completed = subprocess.run(
        [str(INSTRUMENT), sys.executable, "-m", APP],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    with received.lock:
        spans = dict(received.spans)
        metrics = dict(received.metrics)
    create = spans["tools/call create_ticket"]
    assert create[A.VERDICT] == "unverified"
    assert create[A.NEXT_ACTION] == "add_outcome_verifier"
    assert create[A.CATALOG_VERDICT] == "converged"
    assert create[A.CATALOG_MAX_AGE_S] == 120.0  # an OTEL_INSTRUMENTATION_MCP_HEALTH_* option
    fail = spans["tools/call fail"]
    assert (fail[A.VERDICT], fail[A.CALL_FIRST_FAILED_LAYER]) == ("tool_failed", "execution")
    assert fail[A.INCIDENT_KEY]
    verdicts = {labels[A.VERDICT] for labels in metrics[A.METRIC_CALLS]}
    assert verdicts == {"unverified", "tool_failed"}
    assert {labels[A.CATALOG_VERDICT] for labels in metrics[A.METRIC_CATALOG_VERDICTS]} == {
        "converged"
    }
    assert A.METRIC_INCIDENTS in metrics
    assert A.METRIC_MCP_CLIENT_OPERATION_DURATION in metrics  # recorded by the instrumentation
