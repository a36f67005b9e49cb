"""Running the prober: the pipeline, the service, the HTTP endpoint and, if asked, the schedule."""

from __future__ import annotations

import threading
from typing import TextIO

from otel_mcp_health import OutcomePolicyError
from otel_mcp_health.probe._config import ProbeConfig
from otel_mcp_health.probe._endpoint import base_url, make_server
from otel_mcp_health.probe._pipeline import ProbePipeline
from otel_mcp_health.probe._schedule import Scheduler, otlp_metric_readers, register_gauges
from otel_mcp_health.probe._service import ProbeService

EXIT_OK = 0
EXIT_USAGE = 2


def build_service(config: ProbeConfig, *, schedule: bool) -> ProbeService:
    """The service on its pipeline (with OTLP export and the probe gauges when scheduled)."""
    readers = otlp_metric_readers() if schedule else ()
    pipeline = ProbePipeline(otlp=schedule, metric_readers=readers, approved_catalog=config.pins)
    try:
        service = ProbeService(config, pipeline)
    except BaseException:
        pipeline.shutdown()
        raise
    if schedule:
        register_gauges(pipeline.meters.get_meter("otel_mcp_health.probe"), service)
    return service


def serve(
    config: ProbeConfig,
    listen: tuple[str, int],
    *,
    schedule: bool,
    out: TextIO,
    err: TextIO,
    stop: threading.Event,
) -> int:
    """Serve until ``stop`` is set; the exit code."""
    try:
        service = build_service(config, schedule=schedule)
    except OutcomePolicyError as exc:
        err.write(f"otel-mcp-health probe: [probe].outcomes: {exc}\n")
        return EXIT_USAGE
    scheduler = Scheduler(service) if schedule else None
    try:
        server = make_server(service, *listen)
    except OSError as exc:
        where = f"{listen[0]}:{listen[1]}"
        err.write(f"otel-mcp-health probe: cannot listen on {where} ({exc.strerror})\n")
        service.close()
        return EXIT_USAGE
    thread = threading.Thread(target=server.serve_forever, name="probe-http", daemon=True)
    thread.start()
    out.write(f"otel-mcp-health probe: listening on {base_url(server)}\n")
    out.flush()
    if scheduler is not None:
        scheduler.start()
    try:
        stop.wait()
    finally:
        if scheduler is not None:
            scheduler.stop()
        server.shutdown()
        server.server_close()
        service.close()
    return EXIT_OK
