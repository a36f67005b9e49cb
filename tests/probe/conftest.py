"""Fixtures of the probe suite: the test servers (``probe_servers.py``, a real process on
127.0.0.1), configuration files, and a running prober on an ephemeral port."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import SpanExporter
from tests.support.served import served

from otel_mcp_health.probe import load_config
from otel_mcp_health.probe._endpoint import serving
from otel_mcp_health.probe._pipeline import ProbePipeline
from otel_mcp_health.probe._service import ProbeService

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "probe_servers.py"
CHECK_SERVERS = HERE.parent / "check" / "check_servers.py"


def stdio_command(variant: str = "healthy") -> list[str]:
    """The argv of one of the check suite's stdio servers."""
    return [sys.executable, str(CHECK_SERVERS), "stdio", variant]


@pytest.fixture(scope="session")
def servers() -> Iterator[str]:
    """The probe's HTTP/SSE test servers in their own process; yields the base URL."""
    with served([sys.executable, str(SERVERS)]) as url:
        yield url


def server_counts(base: str) -> dict[str, int]:
    """The JSON-RPC messages the test servers received, by ``"/path method"``."""
    with urllib.request.urlopen(base + "/counts", timeout=10) as answer:
        counts: dict[str, int] = json.loads(answer.read())
    return counts


def post(base: str, path: str) -> None:
    request = urllib.request.Request(base + path, data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """Status and body of a GET (an HTTP error status is returned, not raised)."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def config_file(tmp_path: Path) -> Callable[[str], Path]:
    """Writes a configuration file and returns its path."""

    def write(text: str) -> Path:
        path = tmp_path / "probe.toml"
        path.write_text(text, encoding="utf-8")
        return path

    return write


@contextmanager
def running(
    path: Path, exporters: Sequence[SpanExporter] = ()
) -> Iterator[tuple[ProbeService, str]]:
    """A prober of ``path`` serving on an ephemeral port: (service, base URL)."""
    config = load_config(path)
    pipeline = ProbePipeline(otlp=False, approved_catalog=config.pins, exporters=exporters)
    service = ProbeService(config, pipeline)
    try:
        with serving(service) as base:
            yield service, base
    finally:
        service.close()


def series(text: str) -> dict[str, float]:
    """The samples of a Prometheus text answer: ``{'name{labels}': value}``."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            found[name] = float(value)
    return found


def one(found: dict[str, float], family: str) -> str:
    """The single series of ``family`` (its full name with labels)."""
    names = [n for n in found if n == family or n.startswith(family + "{")]
    assert len(names) == 1, (family, names)
    return names[0]
