"""What a session without a call is ready for, on the exported spans (docs/model.md#without-a-call).

The real instrumented mcp 2.x client against the integration suite's servers, through the real
SDK pipeline. A failed handshake span carries the five ``mcp_health.layer.*`` statuses of where it
stopped (a successful one carries none), and every span that judges the catalog carries the
session's readiness, ``mcp_health.readiness.*`` (a stale and an incomplete catalog:
``test_scenarios.py``). ``otel-mcp-health check`` reads both instead of deriving them.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client
from opentelemetry.sdk.trace import ReadableSpan
from tests.integration.mcp_health_servers import build_server, serve_http
from tests.integration.scenarios import list_all
from tests.support.processor_helpers import Pipeline, attrs, readiness

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio
LAYERS = ("transport", "authorization", "protocol", "execution", "outcome")


def _layers(span: ReadableSpan) -> dict[str, Any]:
    found = attrs(span)
    return {layer: found[key] for layer in LAYERS if (key := A.layer_attribute(layer)) in found}


@pytest.mark.parametrize(
    ("route", "verdict", "layers"),
    [
        (
            "/authn",
            "needs_auth",
            ("passed", "failed", "unobserved", "unobserved", "unobserved"),
        ),
        (
            "/down",
            "transport_error",
            ("failed", "unobserved", "unobserved", "unobserved", "unobserved"),
        ),
    ],
    ids=["401", "503"],
)
async def test_a_failed_handshake_carries_the_layers_of_where_it_stopped(
    instrumented: Pipeline, route: str, verdict: str, layers: tuple[str, ...]
) -> None:
    async with serve_http(build_server()) as base:
        with anyio.fail_after(30), pytest.raises(Exception):  # noqa: B017, PT011  # the SDK's own
            async with Client(base + route):
                pass
    handshake = instrumented.last("initialize")
    assert attrs(handshake)[A.VERDICT] == verdict
    assert _layers(handshake) == dict(zip(LAYERS, layers, strict=True))
    assert readiness(handshake) == (None, None, None)
    # the superseded probe is not judged: no verdict, no layers
    assert _layers(instrumented.last("server/discover")) == {}


async def test_a_converged_session_is_ready_on_the_page_that_ends_its_discovery(
    instrumented: Pipeline,
) -> None:
    async with Client(build_server(), mode="legacy") as client:
        await list_all(client)
        await client.call_tool("lookup", {})
    handshake = instrumented.last("initialize")
    assert A.VERDICT not in attrs(handshake)
    assert _layers(handshake) == {}  # a successful handshake carries no layer statuses
    first, last = instrumented.named("tools/list")
    assert readiness(first) == (None, None, None)  # the chain had not ended
    assert attrs(last)[A.CATALOG_VERDICT] == "converged"
    assert readiness(last) == ("converged", "ok", "none")
    # a call carries its own verdict and the catalog's, not the readiness of a session without one
    call = attrs(instrumented.last("tools/call lookup"))
    assert call[A.CATALOG_VERDICT] == "converged"
    assert A.READINESS_VERDICT not in call
