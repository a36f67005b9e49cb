"""Run ``check --otlp`` as a subprocess against a local OTLP/HTTP receiver; return what arrived."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar


class _Receiver(BaseHTTPRequestHandler):
    """The OTLP/HTTP receiver: keeps every POSTed body (class-wide, reset per run) and answers 200,
    so the exporter counts each export as delivered."""

    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        type(self).bodies.append(self.rfile.read(length))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


def exported_bytes(argv: list[str], tmp_path: Path) -> bytes:
    """Every byte ``otel-mcp-health check ARGV --otlp`` exported (OTLP/HTTP protobuf)."""
    _Receiver.bodies = []
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{server.server_port}"
        proc = subprocess.run(
            [sys.executable, "-m", "otel_mcp_health", "check", "--otlp", *argv],
            capture_output=True,
            check=False,
            timeout=60,
            env=env,
            cwd=tmp_path,
        )
        assert proc.returncode in (0, 1), proc.stderr
    finally:
        server.shutdown()
        server.server_close()
    return b"".join(_Receiver.bodies)
