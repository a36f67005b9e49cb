"""``check --verify-http URL``: a port is part of the URL; the status has its own option (issue 26).

``--verify-http https://api.example.com:443`` used to mean "expect status 443 from
https://api.example.com", a guaranteed ``false_success``. The GET goes through a real HTTP proxy
on 127.0.0.1 (``http_proxy``), which records the absolute URL each request names, so the test
sees exactly which host, port and path the verifier asked for, with no privileged port.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest
from tests.check.check_support import check, stdio


class Proxy:
    """A forward proxy that answers itself: 503 for a path ending in ``/down``, else 200."""

    def __init__(self) -> None:
        self.requested: list[str] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                proxy.requested.append(self.path)  # absolute form: http://host:port/path
                self.send_response(503 if self.path.endswith("/down") else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[Proxy]:
    running = Proxy()
    thread = threading.Thread(target=running.server.serve_forever, daemon=True)
    thread.start()
    for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", running.url)
    try:
        yield running
    finally:
        running.server.shutdown()
        running.server.server_close()


def _check(*verify: str) -> tuple[int, str]:
    result = check("--json", "--call", "lookup", *verify, *stdio("healthy"))
    verdict = result.json()["verdict"] if result.code != 2 else result.err
    return result.code, verdict


def test_a_url_with_a_port_is_a_url_with_a_port(proxy: Proxy) -> None:
    assert _check("--verify-http", "http://api.example.test:443") == (0, "healthy")
    assert proxy.requested == ["http://api.example.test:443"]


def test_the_expected_status_has_its_own_option(proxy: Proxy) -> None:
    down = "http://api.example.test:8443/down"
    assert _check("--verify-http", down, "--verify-status", "503") == (0, "healthy")
    assert _check("--verify-http", down) == (1, "false_success")
    assert proxy.requested == [down, down]


def test_the_old_status_suffix_is_refused_never_read_silently(proxy: Proxy) -> None:
    code, message = _check("--verify-http", "http://api.example.test/down:503")
    assert code == 2
    assert "--verify-status STATUS" in message
    assert proxy.requested == []


@pytest.mark.parametrize(
    "url", ["http://api.example.test?page=2:503", "http://api.example.test/down#top:503"]
)
def test_the_old_status_suffix_after_a_query_or_fragment_is_refused(proxy: Proxy, url: str) -> None:
    """``URL:STATUS`` is refused wherever the URL ends, not only after a path: after a query or
    a fragment the old spelling was read as part of the URL, silently expecting 200."""
    code, message = _check("--verify-http", url)
    assert code == 2
    assert "--verify-status STATUS" in message
    assert proxy.requested == []


def test_credentials_in_the_url_are_a_usage_error(proxy: Proxy) -> None:
    """The GET cannot send them (urllib reads ``user:pass@host`` as the host): refused with a
    message that names neither, never a silent ``unverified``."""
    code, message = _check("--verify-http", "http://someone:hunter2@api.example.test/")
    assert code == 2
    assert "credentials" in message
    assert "hunter2" not in message
    assert "someone" not in message
    assert proxy.requested == []
