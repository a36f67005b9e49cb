"""Every client library, every SDK line: a handshake answered with a non-auth HTTP error status
(a wrong path's 404) is ``transport_error`` / ``http_404`` on the handshake span, and the path is
not exported. The status is the answer: the SDKs raise for it (1.x) or turn it into a JSON-RPC
error of their own (2.x), and both read the same (docs/model.md#choices)."""

from __future__ import annotations

import pytest
from tests.matrix.test_scenario_table import KINDS, attempt, client_spans, verdict_row
from tests.support.matrix_drivers import Events, connect
from tests.support.processor_helpers import Pipeline, attrs

from otel_mcp_health import attributes as A

pytestmark = pytest.mark.anyio

WRONG_PATH = "/tenant-5d1e0b/mcp"


@pytest.mark.parametrize("kind", KINDS)
async def test_a_handshake_refused_with_404_is_a_transport_error(
    kind: str, verdicts: Pipeline, reference_url: str
) -> None:
    async def handshake() -> None:
        async with connect(kind, "http", reference_url + WRONG_PATH, Events()):
            pass

    await attempt(handshake())
    judged = [
        (*verdict_row(s)[1:], attrs(s)[A.CALL_FIRST_FAILED_LAYER])
        for s in client_spans(verdicts)
        if s.name == "initialize"
    ]
    assert judged == [("transport_error", "retry_within_budget", "http_404", "transport")]
    exported = "\n".join(span.to_json() for span in verdicts.spans())
    assert "tenant-5d1e0b" not in exported
