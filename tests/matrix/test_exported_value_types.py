"""Every exported attribute value is a plain OpenTelemetry value type, never a subclass.

Reason codes live in ``StrEnum`` classes (``core/reasons.py``); a member is a ``str`` subclass,
so it compares equal to its text but is not the value the span carried before: an exporter, a
downstream processor or a test that checks ``type(value) is str`` sees ``DigestReason`` instead.
The codecs write the plain text. Here, the install of tools that have no digest (an element that
is not an object, a value with no RFC 8785 form) on the real client of both SDK lines.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.matrix_drivers import Events, connect
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health import record_installed_tools

pytestmark = pytest.mark.anyio

PLAIN = (bool, int, float, str, tuple)

INSTALLS = {
    "tool_not_an_object": [object()],
    "digest_unrepresentable": [{"name": "huge", "inputSchema": {"maximum": 2**60}}],
}


def _plain(value: Any) -> bool:
    if type(value) is tuple:
        return all(type(item) in PLAIN[:4] for item in value)
    return type(value) in PLAIN


@pytest.mark.parametrize("reason", sorted(INSTALLS))
async def test_a_digest_error_is_exported_as_plain_text(verdicts: Pipeline, reason: str) -> None:
    async with connect("session", "stdio", None, Events()) as agent:
        await agent.list_all()
        record_installed_tools(agent.session, INSTALLS[reason])
    [install] = verdicts.named(A.INSTALL_SPAN_NAME)
    attrs = install.attributes or {}
    assert attrs[A.CATALOG_DIGEST_ERROR] == reason
    assert type(attrs[A.CATALOG_DIGEST_ERROR]) is str
    odd = {
        (span.name, key, type(value).__name__)
        for span in verdicts.spans()
        for key, value in (span.attributes or {}).items()
        if not _plain(value)
    }
    assert not odd
