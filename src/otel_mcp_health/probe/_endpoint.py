"""The prober's HTTP endpoint: ``/probe?target=NAME&module=MODULE`` and ``/metrics``.

``/probe`` answers a configured target only (400 otherwise, the requested value never echoed:
the prober is not a relay, and no error answer quotes a method, path or request line), honours
``X-Prometheus-Scrape-Timeout-Seconds`` (the probe's bound is the module's timeout or the
scraper's less :data:`SCRAPE_MARGIN_S`, whichever is shorter) and answers Prometheus text. Each
request is served on its own thread; the service bounds the probes. Nothing a client sends
(query, headers) is logged.
"""

from __future__ import annotations

import math
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Final

from otel_mcp_health.probe._render import FAMILIES, exposition
from otel_mcp_health.probe._service import (
    ProberBusyError,
    ProbeService,
    UnknownModuleError,
    UnknownTargetError,
)

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
SCRAPE_TIMEOUT_HEADER: Final = "X-Prometheus-Scrape-Timeout-Seconds"
#: Time kept back from the scraper's timeout to write the answer.
SCRAPE_MARGIN_S: Final = 0.5
#: A client must send its whole request (and read the answer) within this (slowloris).
IDLE_TIMEOUT_S: Final = 5.0
#: Connections served at once; more wait in the listen backlog, costing the prober nothing.
MAX_CONNECTIONS: Final = 64


def scrape_bound(raw: str | None) -> float | None:
    """The probe bound a scraper's timeout header allows (``None``: no usable header)."""
    try:
        value = float(raw) if raw is not None else math.nan
    except ValueError:
        return None
    if not (value > 0 and math.isfinite(value)):
        return None
    return max(value - SCRAPE_MARGIN_S, 0.1)


class _Handler(BaseHTTPRequestHandler):
    service: ProbeService
    server_version = "otel-mcp-health-probe"
    sys_version = ""
    timeout = IDLE_TIMEOUT_S  # socket timeout of every read and write of a connection

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        """Nothing is logged: a request line carries the scraper's query."""

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's error answers (an unsupported method, a malformed request line)
        with its fixed wording only: its own message quotes the method or the request line."""
        del message, explain
        super().send_error(code)

    def do_GET(self) -> None:
        try:
            parts = urllib.parse.urlsplit(self.path)
        except ValueError:  # e.g. a bracketed host that is no address; the message quotes it
            self._answer(400, "bad request: /probe?target=NAME&module=MODULE\n")
            return
        if parts.path == "/metrics":
            self._answer(200, self.service.stats.render())
        elif parts.path == "/probe":
            self._probe(parts.query)
        else:
            self._answer(404, "not found: /probe?target=NAME&module=MODULE or /metrics\n")

    def _probe(self, query: str) -> None:
        try:
            params = urllib.parse.parse_qs(query, strict_parsing=False, max_num_fields=8)
        except ValueError:
            params = {"": ["?"]}
        if any(len(v) != 1 for v in params.values()) or not set(params) <= {"target", "module"}:
            self.service.stats.refused("bad_request")
            self._answer(400, "bad request: /probe?target=NAME&module=MODULE\n")
            return
        target, module = params.get("target", [None])[0], params.get("module", [None])[0]
        bound = scrape_bound(self.headers.get(SCRAPE_TIMEOUT_HEADER))
        try:
            result = self.service.probe(target, module, timeout_s=bound)
            text = exposition(result.samples(time.monotonic()), FAMILIES)
        except UnknownTargetError:
            self.service.stats.refused("unknown_target")
            self._answer(400, "unknown target: only the targets of the configuration file\n")
        except UnknownModuleError:
            self.service.stats.refused("unknown_module")
            self._answer(400, "unknown module: only the modules of the configuration file\n")
        except ProberBusyError:
            self.service.stats.refused("busy")
            self._answer(503, "busy: no probe slot within the scrape timeout\n")
        except Exception as exc:  # noqa: BLE001 - a fault of ours: the scraper gets a 500, never a hang
            self.service.stats.refused("internal_error")
            self.service.stats.fault(exc)
            self._answer(500, "internal error: see the prober's log\n")
        else:
            self._answer(200, text)

    def _answer(self, status: int, body: str) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _BoundedServer(ThreadingHTTPServer):
    """At most :data:`MAX_CONNECTIONS` connections accepted at once: a connection is accepted
    only when a slot is free, so clients that never finish a request cost the prober no more
    than that many threads and descriptors, and later clients wait in the backlog."""

    request_queue_size = 128
    daemon_threads = True

    def __init__(self, *args: object, **kwargs: object) -> None:
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def get_request(self) -> tuple[socket.socket, object]:
        if not self._slots.acquire(timeout=0.5):
            raise OSError("no connection slot")  # serve_forever polls again (and sees shutdown)
        try:
            return super().get_request()
        except BaseException:
            self._slots.release()
            raise

    def close_request(self, request: object) -> None:
        try:
            super().close_request(request)  # type: ignore[arg-type]
        finally:
            self._slots.release()

    def handle_error(self, request: object, client_address: object) -> None:
        """One fixed line instead of the standard library's traceback, which may quote what the
        client sent."""
        del request, client_address
        sys.stderr.write("otel-mcp-health probe: a request failed in the prober\n")


class _Server6(_BoundedServer):
    address_family = socket.AF_INET6


def make_server(service: ProbeService, host: str, port: int) -> ThreadingHTTPServer:
    """The HTTP server of ``service`` bound to ``host:port`` (``0``: an ephemeral port)."""
    handler = type("ProbeHandler", (_Handler,), {"service": service})
    server: ThreadingHTTPServer = (_Server6 if ":" in host else _BoundedServer)(
        (host, port), handler
    )
    server.daemon_threads = True
    return server


def base_url(server: ThreadingHTTPServer) -> str:
    """``http://HOST:PORT`` of a bound server."""
    host, port = server.server_address[:2]
    shown = f"[{host!s}]" if ":" in str(host) else str(host)
    return f"http://{shown}:{port}"


@contextmanager
def serving(service: ProbeService, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve ``service`` on a background thread; yields the base URL; stops on exit."""
    server = make_server(service, host, port)
    thread = threading.Thread(target=server.serve_forever, name="probe-http", daemon=True)
    thread.start()
    try:
        yield base_url(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
