"""The evidence codec: core evidence records ↔ span attributes (private; docs/attributes.md).

The one home of the mapping between the evidence records of :mod:`otel_mcp_health.core.evidence`
and the span attributes and events the instrumentation writes: each ``encode_*`` sits next to its
``decode_*``, naming the same keys with the same value types (those names and types are a public
contract). The instrumentation writes evidence through the encoders, the processor reads it back
through the decoders, and a property test proves ``decode(encode(e)) == e`` for every record
decoding can produce, so the processor and ``otel-mcp-health classify`` apply one set of rules.

Conventions kept from the evidence model: an absent attribute is *not observed*, never *passed*.
The one inference is authorization on a transport without an authorization exchange
(``network.transport = pipe``, or an in-process session that records no transport at all): that
layer is ``not_applicable``, exactly like ``"authorization": null`` in an evidence file.

:mod:`.call` holds one exchange and one ``tools/call``; :mod:`.session` the handshake, catalog
pages and progress.
"""

from otel_mcp_health._codec._read import Attributes
from otel_mcp_health._codec.call import (
    decode_authorization,
    decode_call,
    decode_effect,
    decode_execution,
    decode_outcome,
    decode_protocol,
    decode_tool_call_check,
    decode_transport,
    encode_authorization,
    encode_call,
    encode_contract,
    encode_delivery,
    encode_effect,
    encode_execution,
    encode_missing,
    encode_network,
    encode_outcome,
    encode_protocol,
    encode_read_only,
    encode_receipt,
    encode_rpc_code,
    encode_tool_call_check,
    encode_transport,
    has_network,
)
from otel_mcp_health._codec.session import (
    REQUEST_TOKEN,
    decode_digest,
    decode_handshake,
    decode_page,
    decode_progress,
    encode_clocks,
    encode_digest,
    encode_handshake,
    encode_page,
    encode_progress,
    encode_progress_event,
    encode_progress_notification,
    encode_tools_capability,
    encode_versions,
)

__all__ = [
    "REQUEST_TOKEN",
    "Attributes",
    "decode_authorization",
    "decode_call",
    "decode_digest",
    "decode_effect",
    "decode_execution",
    "decode_handshake",
    "decode_outcome",
    "decode_page",
    "decode_progress",
    "decode_protocol",
    "decode_tool_call_check",
    "decode_transport",
    "encode_authorization",
    "encode_call",
    "encode_clocks",
    "encode_contract",
    "encode_delivery",
    "encode_digest",
    "encode_effect",
    "encode_execution",
    "encode_handshake",
    "encode_missing",
    "encode_network",
    "encode_outcome",
    "encode_page",
    "encode_progress",
    "encode_progress_event",
    "encode_progress_notification",
    "encode_protocol",
    "encode_read_only",
    "encode_receipt",
    "encode_rpc_code",
    "encode_tool_call_check",
    "encode_tools_capability",
    "encode_transport",
    "encode_versions",
    "has_network",
]
