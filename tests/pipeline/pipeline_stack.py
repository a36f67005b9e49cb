"""The operator's stack on 127.0.0.1: built collector, Prometheus, Alertmanager, a webhook sink.

Used by the pipeline tests and by ``make pipeline`` (``python tests/pipeline/pipeline_stack.py``).
Every process listens on 127.0.0.1 on a free port, writes its log under the run directory and is
stopped by its PID (terminate, then kill after a bounded wait). The configs are the repository's
own (``collector/``), with only what a test must change: ports, the webhook URL, and (for speed)
scrape/evaluation intervals, the alert window and ``for`` durations, and Alertmanager's timers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
COLLECTOR_DIR = ROOT / "collector"
ALERTING_DIR = COLLECTOR_DIR / "alerting"
RULES = ALERTING_DIR / "mcp-health-rules.yml"
ALERTMANAGER_CONFIG = ALERTING_DIR / "alertmanager.yml"
BUNDLED_CONFIG = COLLECTOR_DIR / "otelcol.yaml"
COLLECTOR_BIN = COLLECTOR_DIR / "bin" / "otelcol-mcp-health"
#: The placeholder webhook sink of alertmanager.yml, replaced by the real sink's URL.
SINK_PLACEHOLDER = "http://127.0.0.1:9099"
PROVISION_HINT = "run `make provision` (scripts/provision-pipeline.sh) first"
STOP_TIMEOUT_S = 10.0


def binary(name: str) -> str:
    """The path of a required executable, or a clear error naming how to get it."""
    if name == "otelcol-mcp-health":
        path = os.environ.get("OTELCOL_MCP_HEALTH_BIN") or str(COLLECTOR_BIN)
        if os.access(path, os.X_OK):
            return path
        msg = f"the built collector is missing at {path}: {PROVISION_HINT}"
        raise FileNotFoundError(msg)
    found = shutil.which(name)
    if found is None:
        msg = f"{name} is not installed: {PROVISION_HINT}"
        raise FileNotFoundError(msg)
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def http_get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body: bytes = response.read()
        return body


def wait_until_ready(url: str, what: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            msg = f"{what} exited with {process.returncode}:\n{log.read_text()[-3000:]}"
            raise RuntimeError(msg)
        try:
            http_get(url, timeout=1)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
        else:
            return
    msg = f"{what} not ready at {url} within 30 s:\n{log.read_text()[-3000:]}"
    raise RuntimeError(msg)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop one process by its PID: SIGTERM, then SIGKILL after a bounded wait."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_S)


@contextmanager
def running(
    argv: list[str], log: Path, *, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )
    try:
        yield process
    finally:
        stop(process)


# ---- the webhook sink: Alertmanager's receivers post here, one path per receiver ------------
@dataclass
class Notification:
    """One alert as an Alertmanager receiver posted it: the receiver's path, firing or resolved, the
    alert's name, labels and annotations, and when it arrived (``time.monotonic()``)."""

    receiver_path: str
    status: str
    alertname: str
    labels: dict[str, str]
    annotations: dict[str, str]
    at: float


@dataclass
class WebhookSink:
    """Every alert Alertmanager's receivers posted, in arrival order (guarded by ``lock``); ``url``
    is where the sink listens."""

    notifications: list[Notification] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def record(self, path: str, body: dict[str, Any]) -> None:
        with self.lock:
            for alert in body.get("alerts", []):
                labels = alert.get("labels", {})
                self.notifications.append(
                    Notification(
                        receiver_path=path,
                        status=str(alert.get("status")),
                        alertname=str(labels.get("alertname")),
                        labels=labels,
                        annotations=alert.get("annotations", {}),
                        at=time.monotonic(),
                    )
                )

    def snapshot(self) -> list[Notification]:
        with self.lock:
            return list(self.notifications)


@contextmanager
def webhook_sink() -> Iterator[WebhookSink]:
    sink = WebhookSink()

    class Handler(BaseHTTPRequestHandler):
        """Records each POSTed Alertmanager webhook body under the path it was posted to; answers
        200."""

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            sink.record(self.path, json.loads(self.rfile.read(length) or b"{}"))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib handler's signature
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    sink.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield sink
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=STOP_TIMEOUT_S)


# ---- config derivation ------------------------------------------------------------------------
@dataclass(frozen=True)
class Timings:
    """Speed-ups for a test run; the defaults are the shipped values."""

    scrape_s: float = 15
    window: str | None = None  # the rules' 10m window
    for_duration: str | None = None  # every `for:` of the rules
    convergence_objective_le: str | None = None  # the le="30" objective bucket
    alertmanager_fast: bool = False
    spanmetrics_flush: str = "15s"
    decision_wait: str = "10s"


def derive_rules(timings: Timings, source: Path = RULES) -> str:
    text = source.read_text()
    if timings.window:
        text = text.replace("[10m]", f"[{timings.window}]").replace(
            "offset 10m", f"offset {timings.window}"
        )
    if timings.for_duration:
        text = re.sub(r"(?m)^(\s+)for: \S+$", rf"\1for: {timings.for_duration}", text)
    if timings.convergence_objective_le:
        text = text.replace('le="30"', f'le="{timings.convergence_objective_le}"')
    return text


def derive_alertmanager(sink_url: str, timings: Timings) -> str:
    text = ALERTMANAGER_CONFIG.read_text().replace(SINK_PLACEHOLDER, sink_url)
    if timings.alertmanager_fast:
        text = re.sub(r"group_wait: \S+", "group_wait: 0s", text)
        text = re.sub(r"group_interval: \S+", "group_interval: 1s", text)
        text = re.sub(r"repeat_interval: \S+", "repeat_interval: 1h", text)
    return text


def derive_prometheus(
    rules: Path,
    collector: str,
    alertmanager: str,
    scrape_s: float,
    *,
    extra_rules: Sequence[Path] = (),
    extra_scrape_configs: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The example prometheus.yml, as JSON (valid YAML), with this run's targets (and any extra
    rule files and scrape jobs a test adds, e.g. the probe's)."""
    config = {
        "global": {"scrape_interval": f"{scrape_s}s", "evaluation_interval": f"{scrape_s}s"},
        "rule_files": [str(rules), *map(str, extra_rules)],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]},
        "scrape_configs": [
            {
                "job_name": "otel-mcp-health-collector",
                "static_configs": [{"targets": [collector]}],
            },
            *extra_scrape_configs,
        ],
    }
    return json.dumps(config, indent=2)


# ---- the stack ----------------------------------------------------------------------------------
@dataclass
class Stack:
    """The running stack: its webhook sink, the Prometheus and Alertmanager URLs, the collector's
    OTLP gRPC and HTTP endpoints and metrics URL, the tracing backend's file, and the start-up
    time."""

    workdir: Path
    sink: WebhookSink
    prometheus_url: str
    alertmanager_url: str
    otlp_grpc: str
    otlp_http: str
    collector_metrics_url: str
    traces_file: Path
    started_in_s: float

    def query(self, expr: str) -> dict[str, Any]:
        """Run an instant PromQL query; returns Prometheus's JSON answer."""
        url = f"{self.prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            answer: dict[str, Any] = json.loads(http_get(url))
        except urllib.error.HTTPError as exc:
            answer = json.loads(exc.read() or b"{}")
        return answer

    def agent_env(self, service: str) -> dict[str, str]:
        """The zero-code OpenTelemetry set-up of an instrumented agent exporting to the stack."""
        return {
            "OTEL_PYTHON_CONFIGURATOR": "mcp_health",
            "OTEL_SERVICE_NAME": service,
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_METRICS_EXPORTER": "otlp",
            "OTEL_LOGS_EXPORTER": "none",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{self.otlp_grpc}",
            "OTEL_EXPORTER_OTLP_INSECURE": "true",
            "OTEL_METRIC_EXPORT_INTERVAL": "500",
            "OTEL_BSP_SCHEDULE_DELAY": "200",
        }


BACKEND_CONFIG = """
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: ${env:OTLP_GRPC_ENDPOINT}
exporters:
  file:
    path: ${env:TRACES_FILE}
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
"""


@contextmanager
def stack(
    workdir: Path,
    timings: Timings,
    *,
    extra_rules: Sequence[Path] = (),
    extra_scrape_configs: Sequence[Mapping[str, Any]] = (),
) -> Iterator[Stack]:
    """Start sink, Alertmanager, Prometheus, a tracing backend and the bundled collector.

    ``extra_rules`` (rule files, derived with the same timings) and ``extra_scrape_configs``
    (Prometheus scrape jobs) are added to Prometheus's config."""
    started = time.monotonic()
    collector_bin = binary("otelcol-mcp-health")
    prometheus_bin, alertmanager_bin = binary("prometheus"), binary("prometheus-alertmanager")
    workdir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack_:
        sink = stack_.enter_context(webhook_sink())

        am_port = free_port()
        am_config = workdir / "alertmanager.yml"
        am_config.write_text(derive_alertmanager(sink.url, timings))
        am_log = workdir / "alertmanager.log"
        am = stack_.enter_context(
            running(
                [
                    alertmanager_bin,
                    f"--config.file={am_config}",
                    f"--storage.path={workdir / 'alertmanager-data'}",
                    f"--web.listen-address=127.0.0.1:{am_port}",
                    "--cluster.listen-address=",
                ],
                am_log,
            )
        )

        backend_port, traces_file = free_port(), workdir / "traces.jsonl"
        backend_config = workdir / "backend-collector.yaml"
        backend_config.write_text(BACKEND_CONFIG)
        backend_log = workdir / "backend-collector.log"
        backend = stack_.enter_context(
            running(
                [collector_bin, f"--config={backend_config}"],
                backend_log,
                env={
                    "OTLP_GRPC_ENDPOINT": f"127.0.0.1:{backend_port}",
                    "TRACES_FILE": str(traces_file),
                },
            )
        )

        ports = {name: free_port() for name in ("grpc", "http", "prom", "health", "telemetry")}
        collector_log = workdir / "collector.log"
        collector = stack_.enter_context(
            running(
                [collector_bin, f"--config={BUNDLED_CONFIG}"],
                collector_log,
                env={
                    "OTLP_GRPC_ENDPOINT": f"127.0.0.1:{ports['grpc']}",
                    "OTLP_HTTP_ENDPOINT": f"127.0.0.1:{ports['http']}",
                    "PROMETHEUS_EXPORTER_ENDPOINT": f"127.0.0.1:{ports['prom']}",
                    "OTELCOL_HEALTH_ENDPOINT": f"127.0.0.1:{ports['health']}",
                    "OTELCOL_TELEMETRY_PORT": str(ports["telemetry"]),
                    "TRACES_BACKEND_ENDPOINT": f"127.0.0.1:{backend_port}",
                    "SPANMETRICS_FLUSH_INTERVAL": timings.spanmetrics_flush,
                    "TAIL_SAMPLING_DECISION_WAIT": timings.decision_wait,
                },
            )
        )

        rules = workdir / "mcp-health-rules.yml"
        rules.write_text(derive_rules(timings))
        derived_extra = []
        for source in extra_rules:
            derived = workdir / source.name
            derived.write_text(derive_rules(timings, source))
            derived_extra.append(derived)
        prom_port = free_port()
        prom_config = workdir / "prometheus.yml"
        prom_config.write_text(
            derive_prometheus(
                rules,
                f"127.0.0.1:{ports['prom']}",
                f"127.0.0.1:{am_port}",
                timings.scrape_s,
                extra_rules=derived_extra,
                extra_scrape_configs=extra_scrape_configs,
            )
        )
        prom_log = workdir / "prometheus.log"
        prometheus = stack_.enter_context(
            running(
                [
                    prometheus_bin,
                    f"--config.file={prom_config}",
                    f"--storage.tsdb.path={workdir / 'prometheus-data'}",
                    f"--web.listen-address=127.0.0.1:{prom_port}",
                    "--rules.alert.resend-delay=1s",
                ],
                prom_log,
            )
        )

        wait_until_ready(f"http://127.0.0.1:{am_port}/-/ready", "alertmanager", am, am_log)
        wait_until_ready(
            f"http://127.0.0.1:{ports['health']}/", "collector", collector, collector_log
        )
        wait_until_ready(
            f"http://127.0.0.1:{prom_port}/-/ready", "prometheus", prometheus, prom_log
        )
        if backend.poll() is not None:
            raise RuntimeError(f"backend collector exited:\n{backend_log.read_text()[-3000:]}")
        yield Stack(
            workdir=workdir,
            sink=sink,
            prometheus_url=f"http://127.0.0.1:{prom_port}",
            alertmanager_url=f"http://127.0.0.1:{am_port}",
            otlp_grpc=f"127.0.0.1:{ports['grpc']}",
            otlp_http=f"127.0.0.1:{ports['http']}",
            collector_metrics_url=f"http://127.0.0.1:{ports['prom']}/metrics",
            traces_file=traces_file,
            started_in_s=time.monotonic() - started,
        )


@dataclass
class GatewayLayout:
    """The running gateway layout: the agent collector's OTLP gRPC and HTTP endpoints and metrics
    URL, and the traces file of each gateway's backend."""

    agent_otlp_grpc: str
    agent_otlp_http: str
    agent_metrics_url: str
    #: The file each gateway's tracing backend writes.
    traces_files: tuple[Path, ...]


@contextmanager
def gateway_layout(
    workdir: Path, timings: Timings, *, healthy_percent: int = 10
) -> Iterator[GatewayLayout]:
    """An agent collector routing by trace id to two tail-sampling gateways, each with a backend."""
    collector_bin = binary("otelcol-mcp-health")
    workdir.mkdir(parents=True, exist_ok=True)
    backend_config = workdir / "backend-collector.yaml"
    backend_config.write_text(BACKEND_CONFIG)
    agent_config = COLLECTOR_DIR / "gateway" / "agent.yaml"
    gateway_config = COLLECTOR_DIR / "gateway" / "gateway.yaml"
    with ExitStack() as stack_:
        gateways, files = [], []
        for n in (1, 2):
            backend_port, traces = free_port(), workdir / f"traces-gateway{n}.jsonl"
            backend_env = {
                "OTLP_GRPC_ENDPOINT": f"127.0.0.1:{backend_port}",
                "TRACES_FILE": str(traces),
            }
            stack_.enter_context(
                running(
                    [collector_bin, f"--config={backend_config}"],
                    workdir / f"backend{n}.log",
                    env=backend_env,
                )
            )
            grpc, health = free_port(), free_port()
            log = workdir / f"gateway{n}.log"
            process = stack_.enter_context(
                running(
                    [collector_bin, f"--config={BUNDLED_CONFIG}", f"--config={gateway_config}"],
                    log,
                    env={
                        "OTLP_GRPC_ENDPOINT": f"127.0.0.1:{grpc}",
                        "OTLP_HTTP_ENDPOINT": f"127.0.0.1:{free_port()}",
                        "OTELCOL_HEALTH_ENDPOINT": f"127.0.0.1:{health}",
                        "OTELCOL_TELEMETRY_PORT": str(free_port()),
                        "PROMETHEUS_EXPORTER_ENDPOINT": f"127.0.0.1:{free_port()}",
                        "TRACES_BACKEND_ENDPOINT": f"127.0.0.1:{backend_port}",
                        "TAIL_SAMPLING_DECISION_WAIT": timings.decision_wait,
                        "HEALTHY_TRACES_SAMPLING_PERCENT": str(healthy_percent),
                    },
                )
            )
            wait_until_ready(f"http://127.0.0.1:{health}/", f"gateway {n}", process, log)
            gateways.append(f"127.0.0.1:{grpc}")
            files.append(traces)
        grpc, http, prom, health = free_port(), free_port(), free_port(), free_port()
        log = workdir / "agent-collector.log"
        agent = stack_.enter_context(
            running(
                [collector_bin, f"--config={BUNDLED_CONFIG}", f"--config={agent_config}"],
                log,
                env={
                    "OTLP_GRPC_ENDPOINT": f"127.0.0.1:{grpc}",
                    "OTLP_HTTP_ENDPOINT": f"127.0.0.1:{http}",
                    "OTELCOL_HEALTH_ENDPOINT": f"127.0.0.1:{health}",
                    "OTELCOL_TELEMETRY_PORT": str(free_port()),
                    "PROMETHEUS_EXPORTER_ENDPOINT": f"127.0.0.1:{prom}",
                    "GATEWAY_1_ENDPOINT": gateways[0],
                    "GATEWAY_2_ENDPOINT": gateways[1],
                    "SPANMETRICS_FLUSH_INTERVAL": timings.spanmetrics_flush,
                },
            )
        )
        wait_until_ready(f"http://127.0.0.1:{health}/", "agent collector", agent, log)
        yield GatewayLayout(
            agent_otlp_grpc=f"127.0.0.1:{grpc}",
            agent_otlp_http=f"127.0.0.1:{http}",
            agent_metrics_url=f"http://127.0.0.1:{prom}/metrics",
            traces_files=tuple(files),
        )


# ---- make pipeline -------------------------------------------------------------------------------
def _demo(stack_: Stack) -> int:
    """Feed the stack with `otel-mcp-health demo` (spans over OTLP/HTTP)."""
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{stack_.otlp_http}"}
    demo = Path(sys.executable).with_name("otel-mcp-health")
    return subprocess.run([str(demo), "demo"], env=env, timeout=180, check=False).returncode


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Start collector + Prometheus + Alertmanager on 127.0.0.1, feed them with "
        "the demo, show what fired, stop everything."
    )
    parser.add_argument("--seconds", type=float, default=60, help="how long to keep it up")
    parser.add_argument("--until-interrupted", action="store_true", help="keep it up until Ctrl-C")
    parser.add_argument("--workdir", type=Path, default=ROOT / "collector" / "run")
    args = parser.parse_args()
    fast = Timings(
        scrape_s=1,
        window="2m",
        for_duration="5s",
        alertmanager_fast=True,
        spanmetrics_flush="2s",
        decision_wait="2s",
    )
    shutil.rmtree(args.workdir, ignore_errors=True)  # a fresh Prometheus and Alertmanager state
    with stack(args.workdir, fast) as stack_:
        print(f"stack up in {stack_.started_in_s:.1f} s (logs and configs in {args.workdir})")
        print(f"  Prometheus    {stack_.prometheus_url}/alerts  and  /graph")
        print(f"  Alertmanager  {stack_.alertmanager_url}/#/alerts")
        print(
            f"  collector     OTLP gRPC {stack_.otlp_grpc}, OTLP/HTTP {stack_.otlp_http}, "
            f"metrics {stack_.collector_metrics_url}"
        )
        print(f"  traces kept by tail sampling: {stack_.traces_file}\n", flush=True)
        _demo(stack_)
        deadline = time.monotonic() + args.seconds
        seen = 0
        try:
            while args.until_interrupted or time.monotonic() < deadline:
                notes = stack_.sink.snapshot()
                for note in notes[seen:]:
                    print(
                        f"  alert {note.status:8} {note.alertname:28} -> {note.receiver_path}",
                        flush=True,
                    )
                seen = len(notes)
                time.sleep(1)
        except KeyboardInterrupt:
            print("\ninterrupted")
        print("stopping the stack (by PID)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
