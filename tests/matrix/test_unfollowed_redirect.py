"""A handshake answered with a redirect the SDK does not follow (a 307 to another
origin: a gateway moved the tenant to another host) is a status that is the whole answer to the
request, like a 404: the server was reached and no JSON-RPC envelope came. It must read
``transport_error`` / ``http_307`` at the transport layer on every client library and SDK line.

Before: mcp 2.x resolved the request with a JSON-RPC ``-32600`` it makes up, read as the
server's (``protocol_error``); mcp 1.x raises for the 307 and the handshake read no verdict.

Run as a script, this file is the redirecting server (pure ASGI on 127.0.0.1; prints its URL).
"""

from __future__ import annotations

import socket
import sys
from typing import Any

import pytest

_PORT: list[int] = []


async def _redirect(scope: Any, receive: Any, send: Any) -> None:
    """Every request redirected (307) to the same path on another origin (``localhost``)."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    location = f"http://localhost:{_PORT[0]}/elsewhere/mcp".encode()
    headers = [(b"location", location), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 307, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def _serve() -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # before the URL is printed: a client may connect at once
    _PORT.append(sock.getsockname()[1])
    print(f"http://127.0.0.1:{_PORT[0]}/mcp", flush=True)
    config = uvicorn.Config(_redirect, log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    _serve()
    sys.exit(0)

from collections.abc import Iterator  # noqa: E402
from importlib.metadata import version  # noqa: E402

from tests.matrix.test_scenario_table import KINDS, attempt, client_spans  # noqa: E402
from tests.support.matrix_drivers import Events, connect, http_server  # noqa: E402
from tests.support.processor_helpers import Pipeline, attrs  # noqa: E402

from otel_mcp_health import attributes as A  # noqa: E402
from otel_mcp_health.core.vocabulary import GREEN  # noqa: E402

pytestmark = pytest.mark.anyio


def _status_reaches_the_instrumentation() -> bool:
    """Measured: mcp 1.30 and 2.3 leave the 307 where the instrumentation reads it; mcp 1.19 and
    2.0 do not (docs/model.md)."""
    major, minor = (int(part) for part in version("mcp").split(".")[:2])
    return (major, minor) >= ((1, 30) if major == 1 else (2, 3))


@pytest.fixture
def redirecting_url() -> Iterator[str]:
    with http_server(__file__) as url:
        yield url


@pytest.mark.parametrize("kind", KINDS)
async def test_an_unfollowed_redirect_at_the_handshake_is_a_transport_error(
    kind: str, verdicts: Pipeline, redirecting_url: str
) -> None:
    async def handshake() -> None:
        async with connect(kind, "http", redirecting_url, Events()):
            pass

    await attempt(handshake())
    judged = [
        (attrs(s).get(A.VERDICT), attrs(s).get(A.REASON), attrs(s).get(A.CALL_FIRST_FAILED_LAYER))
        for s in client_spans(verdicts)
        if s.name == "initialize"
    ]
    if _status_reaches_the_instrumentation():
        assert judged == [("transport_error", "http_307", "transport")]
    else:  # mcp 1.19 and 2.0: the handshake has no verdict, and never a green one
        assert all(row[0] not in GREEN for row in judged), judged
    exported = "\n".join(span.to_json() for span in verdicts.spans())
    assert "elsewhere" not in exported  # the Location's path is not exported
