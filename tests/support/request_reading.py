"""A request span's attributes read back as its :class:`RequestEvidence` (tests only).

The codec has no ``decode_request``: the processor reads a request through ``decode_call``,
``decode_cancelled`` and three plain attributes, and so does this reader, so a round trip through
it proves that what the instrumentation writes is what the processor reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.evidence import RequestEvidence


def decode_request(attrs: Mapping[str, Any]) -> RequestEvidence:
    """An ended request span's attributes as its :class:`RequestEvidence`."""
    call = _codec.decode_call(attrs)
    written = attrs.get(A.TRANSPORT_REQUEST_WRITTEN)
    request_id, error_type = attrs.get(A.JSONRPC_REQUEST_ID), attrs.get(A.ERROR_TYPE)
    return RequestEvidence(
        call=call,
        request_id=request_id if isinstance(request_id, str) else None,
        request_written=written if call.transport is None and isinstance(written, bool) else None,
        cancelled=_codec.decode_cancelled(attrs),
        error_type=error_type if isinstance(error_type, str) else None,
    )
