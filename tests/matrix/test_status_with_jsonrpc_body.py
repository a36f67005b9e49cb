"""A handshake refused with HTTP 400 whose body is the server's own JSON-RPC error
(``application/json``, code -32602) is the server's answer, never a transport failure to retry.

mcp 2.x surfaces the body's error: ``protocol_error`` / ``jsonrpc_-32602``. mcp 1.x raises for
the status before it reads the body, so the server's code is never seen: the handshake must not
read ``transport_error`` (whose next action retries a request the server called malformed), nor
anything green.

Run as a script, this file is the refusing server (pure ASGI on 127.0.0.1; prints its URL).
"""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

import pytest

INVALID_PARAMS = -32602


async def _refuse(scope: Any, receive: Any, send: Any) -> None:
    """Every POST answered 400 with a JSON-RPC error carrying the request's id."""
    if scope["type"] != "http":
        return
    body, more = b"", True
    while more:
        message = await receive()
        body, more = body + message.get("body", b""), message.get("more_body", False)
    try:
        request_id = json.loads(body).get("id") if body else None
    except ValueError:
        request_id = None
    error = {"code": INVALID_PARAMS, "message": "Bad Request: unsupported parameters"}
    payload = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(payload))]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def _serve() -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # before the URL is printed: a client may connect at once
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    config = uvicorn.Config(_refuse, log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    _serve()
    sys.exit(0)

from collections.abc import Iterator  # noqa: E402
from importlib.metadata import version  # noqa: E402

from tests.matrix.test_scenario_table import KINDS, attempt, client_spans, verdict_row  # noqa: E402
from tests.support.matrix_drivers import Events, connect, http_server  # noqa: E402
from tests.support.processor_helpers import Pipeline  # noqa: E402

from otel_mcp_health.core.vocabulary import GREEN  # noqa: E402

pytestmark = pytest.mark.anyio


@pytest.fixture
def refusing_url() -> Iterator[str]:
    with http_server(__file__) as url:
        yield url


@pytest.mark.parametrize("kind", KINDS)
async def test_a_400_with_the_servers_jsonrpc_error_is_a_protocol_error(
    kind: str, verdicts: Pipeline, refusing_url: str
) -> None:
    async def handshake() -> None:
        async with connect(kind, "http", refusing_url, Events()):
            pass

    await attempt(handshake())
    judged = [verdict_row(s) for s in client_spans(verdicts) if s.name == "initialize"]
    if version("mcp").startswith("1."):
        assert all(row[1] not in ("transport_error", *GREEN) for row in judged), judged
        return
    assert judged == [("initialize", "protocol_error", "fix_request_contract", "jsonrpc_-32602")]
