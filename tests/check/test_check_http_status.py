"""A handshake refused with a non-auth HTTP error status is ``transport_error`` / ``http_<status>``.

The server was reached and answered with a status instead of a JSON-RPC envelope (a wrong path,
a gateway's 502, a 500): the transport layer failed, as on an SSE connect refused the same way
(docs/model.md#layers), never ``no_evidence`` and never green. Real servers on 127.0.0.1 (our
Starlette app: unknown paths are its 404, ``/status/<code>`` answers that code), the real client.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.check.check_export import exported_bytes
from tests.check.check_support import check

_FAILED_AT_TRANSPORT = {
    "transport": "failed",
    "authorization": "unobserved",
    "protocol": "unobserved",
    "execution": "unobserved",
    "outcome": "unobserved",
}


@pytest.mark.parametrize("era", ["auto", "legacy"])
@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/nowhere/mcp", "http_404"),
        ("/status/404", "http_404"),
        ("/status/400", "http_400"),
        ("/status/500", "http_500"),
        ("/status/502", "http_502"),
        ("/status/503", "http_503"),
    ],
)
def test_a_refused_handshake_is_a_transport_error_with_its_status(
    http_base: str, path: str, reason: str, era: str
) -> None:
    result = check("--json", "--era", era, "--url", f"{http_base}{path}")
    found = result.json()
    assert result.code == 1
    session = found["session"]
    assert (session["verdict"], session["reason"]) == ("transport_error", reason)
    assert session["firstFailedLayer"] == "transport"
    assert session["layers"] == _FAILED_AT_TRANSPORT
    assert (found["verdict"], found["reason"], found["nextAction"]) == (
        "transport_error",
        reason,
        "retry_within_budget",
    )


def test_a_wrong_tenant_path_is_named_in_words_and_its_path_is_not_exported(
    http_base: str, tmp_path: Path
) -> None:
    url = f"{http_base}/tenant-a-canary-5d1e/mcp"
    result = check("--url", url)
    assert result.code == 1
    assert "TRANSPORT_ERROR" in result.out
    assert "http_404" in result.out
    assert "no evidence" not in result.out
    exported = exported_bytes(["--url", url], tmp_path)
    assert b"http_404" in exported  # the verdict was exported ...
    assert b"tenant-a-canary-5d1e" not in exported  # ... and the path was not


def test_the_status_reason_does_not_hide_authorization(http_base: str) -> None:
    found = check("--json", "--url", f"{http_base}/status/401").json()
    assert (found["verdict"], found["reason"]) == ("needs_auth", "http_401")
    assert found["session"]["firstFailedLayer"] == "authorization"


@pytest.mark.parametrize(("code", "reason"), [(404, "http_404"), (500, "http_500")])
def test_a_call_refused_mid_session_is_a_transport_error(
    http_base: str, code: int, reason: str
) -> None:
    url = f"{http_base}/refuse-calls-{code}/mcp"
    found = check("--json", "--url", url, "--call", "lookup", "--args", '{"q": "x"}').json()
    assert found["catalog"]["verdict"] == "converged"  # handshake and discovery went through
    assert found["call"]["firstFailedLayer"] == "transport"
    assert found["call"]["layers"]["transport"] == "failed"
    assert (found["verdict"], found["reason"], found["nextAction"]) == (
        "transport_error",
        reason,
        "retry_within_budget",
    )
