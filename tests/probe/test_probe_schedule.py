"""Scheduled mode: every target on its interval; one trace per probe made of the product's own
judged spans, and the probe's families as metrics, exported over real OTLP/HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.probe.conftest import stdio_command
from tests.probe.probe_servers import TOKEN

from otel_mcp_health import attributes as A
from otel_mcp_health.probe import load_config
from otel_mcp_health.probe._pipeline import ProbePipeline
from otel_mcp_health.probe._schedule import Scheduler, register_gauges
from otel_mcp_health.probe._service import ProbeService


def _config(servers: str, interval: float) -> str:
    return f"""
[probe]
min_interval = 0.01
interval = {interval}

[module.default]
timeout = 15

[[target]]
name = "http"
transport = "streamable_http"
url = "{servers}/secure/mcp"
headers = {{ Authorization = {{ env = "PROBE_TEST_TOKEN", prefix = "Bearer " }} }}
[target.canary]
tool = "lookup"

[[target]]
name = "local"
transport = "stdio"
command = {stdio_command()!r}
""".replace("'", '"')


def _wait(condition: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_each_probe_is_one_trace_of_judged_spans_and_gauges_per_target(
    servers: str, config_file: Callable[[str], Path], monkeypatch: Any
) -> None:
    monkeypatch.setenv("PROBE_TEST_TOKEN", TOKEN)
    config = load_config(config_file(_config(servers, 0.2)))
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    pipeline = ProbePipeline(otlp=False, metric_readers=[reader], exporters=[spans])
    service = ProbeService(config, pipeline)
    register_gauges(pipeline.meters.get_meter("test"), service)
    scheduler = Scheduler(service)
    try:
        scheduler.start()
        _wait(lambda: min(service.stats.probes(t, "default") for t in ("http", "local")) >= 2)
        scheduler.stop()
        metrics = reader.get_metrics_data()
    finally:
        scheduler.stop()
        service.close()
    traces: dict[int, list[Any]] = defaultdict(list)
    for span in spans.get_finished_spans():
        assert span.context is not None
        traces[span.context.trace_id].append(span)
    probes = [t for t in traces.values() if any(s.name == "mcp_health.probe" for s in t)]
    assert len(probes) >= 4
    for trace in probes:
        root = next(s for s in trace if s.name == "mcp_health.probe")
        methods = Counter(
            str((s.attributes or {}).get(A.MCP_METHOD_NAME))
            for s in trace
            if A.MCP_METHOD_NAME in (s.attributes or {})
        )
        expected = Counter({"server/discover": 1, "tools/list": 2})
        if (root.attributes or {})["mcp_health.probe.target"] == "http":
            expected["tools/call"] = 1
        assert methods == expected, methods
        assert all(s.parent is not None for s in trace if s is not root)
        if (root.attributes or {})["mcp_health.probe.target"] == "http":
            call = next(
                s for s in trace if (s.attributes or {}).get(A.MCP_METHOD_NAME) == "tools/call"
            )
            assert (call.attributes or {})[A.VERDICT] == "healthy"
    assert metrics is not None
    success = {
        point.attributes["mcp_health.probe.target"]: point.value
        for rm in metrics.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == "probe_success"
        for point in metric.data.data_points
    }
    assert success == {"http": 1, "local": 1}


class _Receiver(BaseHTTPRequestHandler):
    bodies: dict[str, list[bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.bodies.setdefault(self.path, []).append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@contextmanager
def _otlp_receiver() -> Iterator[tuple[str, dict[str, list[bytes]]]]:
    bodies: dict[str, list[bytes]] = {}
    handler = type("Receiver", (_Receiver,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()


def test_the_command_exports_traces_and_metrics_over_otlp(
    servers: str, config_file: Callable[[str], Path]
) -> None:
    path = config_file(_config(servers, 0.5))
    with _otlp_receiver() as (endpoint, bodies):
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(sys.path),
            "PROBE_TEST_TOKEN": TOKEN,
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_METRIC_EXPORT_INTERVAL": "500",
            "OTEL_BSP_SCHEDULE_DELAY": "200",
        }
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "otel_mcp_health",
                "probe",
                "--config",
                str(path),
                "--listen",
                "127.0.0.1:0",
                "--schedule",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("otel-mcp-health probe: listening on http://127.0.0.1:"), line
            _wait(lambda: len(bodies.get("/v1/traces", [])) >= 2 and "/v1/metrics" in bodies)
        finally:
            proc.terminate()
            out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    names: set[str] = set()
    for body in bodies["/v1/traces"]:
        request = ExportTraceServiceRequest.FromString(body)
        names |= {
            s.name for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans
        }
    assert {"mcp_health.probe", "server/discover"} <= names
    metric_names: set[str] = set()
    for body in bodies["/v1/metrics"]:
        request = ExportMetricsServiceRequest.FromString(body)
        metric_names |= {
            m.name for rm in request.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
        }
    assert {"probe_success", "mcp_health_probe_verdict"} <= metric_names
    everything = b"".join(b for chunks in bodies.values() for b in chunks)
    assert TOKEN.encode() not in everything
    assert TOKEN not in out + err
