"""Approved catalogs leak nothing: canaries in a description, a schema and the pin file's path.

The pinned (reviewed) catalog's ``read_file`` carries one canary in its description and one in
its input schema (``approval_servers.py``); the pin file sits under a directory named by a third.
Real servers, the real client, the instrumentation with ``approved_catalog=`` and the span
processor, with in-memory exporters for spans (attributes, events, status), metrics and OTLP logs
(an OpenTelemetry ``LoggingHandler`` on the root logger at DEBUG, as logging auto-instrumentation
installs one): no canary may appear in any of them, for pins that judge every class of change and
for a corrupt pin file, whose one warning names the file on the local stderr only.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import Client
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from tests.integration.approval_servers import (
    CANARIES,
    CANARY_PIN_DESCRIPTION,
    CANARY_PIN_PATH,
    CANARY_PIN_SCHEMA,
    CHANGES,
    build,
    server_name,
    wire,
)
from tests.integration.test_approval_zero_code import reviewed, write_pins
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.core.pins import pin_server
from otel_mcp_health.instrumentation import McpHealthInstrumentor
from otel_mcp_health.instrumentation._approval import ApprovedCatalogWarning

pytestmark = [
    pytest.mark.anyio,
    # The SDK's own LoggingHandler (opentelemetry-instrumentation-logging is not installed).
    pytest.mark.filterwarnings("ignore:`LoggingHandler` in `opentelemetry-sdk`:DeprecationWarning"),
]


@dataclass
class Telemetry:
    pipeline: Pipeline
    logs: InMemoryLogRecordExporter

    def exported(self) -> str:
        """Every exported span (attributes, events, status, links), metric and log record."""
        parts = [span.to_json() for span in self.pipeline.spans()]
        data = self.pipeline.reader.get_metrics_data()
        if data is not None:
            parts.append(data.to_json())
        parts += [record.to_json() for record in self.logs.get_finished_logs()]
        return "\n".join(parts)


@contextmanager
def instrumented(pins: Path) -> Iterator[Telemetry]:
    """The instrumentation on a processor pipeline with ``approved_catalog=pins``, and an OTLP
    log pipeline on the root logger (our loggers at DEBUG)."""
    pipeline = Pipeline.build()
    logs = InMemoryLogRecordExporter()
    log_provider = LoggerProvider()
    log_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    handler = LoggingHandler(level=logging.DEBUG, logger_provider=log_provider)
    root, ours = logging.getLogger(), logging.getLogger("otel_mcp_health")
    level = ours.level
    root.addHandler(handler)
    ours.setLevel(logging.DEBUG)
    instrumentor = McpHealthInstrumentor()
    instrumentor.instrument(
        tracer_provider=pipeline.provider,
        meter_provider=pipeline.meters,
        approved_catalog=str(pins),
    )
    try:
        yield Telemetry(pipeline, logs)
    finally:
        instrumentor.uninstrument()
        root.removeHandler(handler)
        ours.setLevel(level)
        pipeline.provider.shutdown()


async def drive() -> str:
    """Every changed server: list, then call ``read_file`` (where listed) and ``create_ticket``;
    returns what the application saw of the tools (the canaries reached it)."""
    seen = []
    for change in CHANGES:
        async with Client(build(change), mode="legacy") as client:
            listed = await client.list_tools()
            seen.append(repr(wire(listed.tools)))
            await client.call_tool("read_file", {"path": "notes.txt"})
            await client.call_tool("create_ticket", {"title": "t"})
    return "\n".join(seen)


def _approvals(telemetry: Telemetry) -> dict[str, tuple[object, object]]:
    return {
        str(attrs.get(A.SERVER_NAME)): (
            attrs[A.CATALOG_APPROVAL],
            attrs.get(A.CATALOG_APPROVAL_REASON),
        )
        for span in telemetry.pipeline.spans()
        if A.CATALOG_APPROVAL in (attrs := span.attributes or {})
    }


@pytest.fixture(scope="module")
def pins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tools = reviewed()
    assert CANARY_PIN_DESCRIPTION in repr(tools)
    assert CANARY_PIN_SCHEMA in repr(tools)
    servers = [pin_server(tools, name=server_name(change)) for change in CHANGES]
    return write_pins(tmp_path_factory.mktemp("privacy"), servers)


async def test_no_description_schema_or_pin_path_is_exported(pins: Path) -> None:
    assert CANARY_PIN_PATH in str(pins)
    with instrumented(pins) as telemetry:
        seen = await drive()
        logging.getLogger("otel_mcp_health.test").debug("log-pipeline-probe")
        exported = telemetry.exported()
    assert CANARY_PIN_DESCRIPTION in seen  # the canaries reached the application
    assert CANARY_PIN_SCHEMA in seen
    assert "log-pipeline-probe" in exported  # our loggers' records are exported
    assert _approvals(telemetry)["approval-description"] == ("drifted", "material_change")
    assert _approvals(telemetry)["approval-title"] == ("approved", None)
    assert [canary for canary in CANARIES if canary in exported] == []


async def test_a_corrupt_pin_file_warns_once_locally_and_exports_no_path(tmp_path: Path) -> None:
    folder = tmp_path / CANARY_PIN_PATH
    folder.mkdir()
    corrupt = folder / "approved.toml"
    corrupt.write_text(f'format = "{CANARY_PIN_DESCRIPTION}"\n[[server\n', encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with instrumented(corrupt) as telemetry:
            await drive()
            exported = telemetry.exported()
    ours = [w for w in caught if issubclass(w.category, ApprovedCatalogWarning)]
    assert len(ours) == 1
    assert str(corrupt) in str(ours[0].message)
    assert CANARY_PIN_DESCRIPTION not in str(ours[0].message)  # never the file's contents
    assert set(_approvals(telemetry).values()) == {("drifted", "pins_unreadable")}
    assert len(_approvals(telemetry)) == len(CHANGES)
    assert [canary for canary in CANARIES if canary in exported] == []
