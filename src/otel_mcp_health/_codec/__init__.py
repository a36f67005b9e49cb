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

:mod:`.call` holds one exchange, one ``tools/call``, one request as it ended
(:func:`encode_request`: what the instrumentation writes once, at a request's end) and the flags of
a call still in flight;
:mod:`.session` the connection, the handshake (:func:`encode_handshake_result`), catalog pages
(origin, place in the chain; :func:`encode_page_result`, a page as its span ends) and progress;
:mod:`.server` what spans name of a server's identity
(:class:`~otel_mcp_health.core.server.ServerIdentity`); :mod:`.approval` a discovery's and a
call's approval against the approved catalog; :mod:`.offered` what a call's agent was offered.
Every function here is used by the instrumentation or the processor.
"""

from otel_mcp_health._codec._read import Attributes, present, read_str
from otel_mcp_health._codec.approval import (
    decode_call_approval,
    encode_call_approval,
    encode_catalog_approval,
)
from otel_mcp_health._codec.call import (
    decode_authorization,
    decode_call,
    decode_cancelled,
    decode_effect,
    decode_execution,
    decode_outcome,
    decode_pending,
    decode_protocol,
    decode_tool_call_check,
    decode_transport,
    decode_waiting_for_user,
    encode_authorization,
    encode_call,
    encode_cancelled,
    encode_contract,
    encode_delivery,
    encode_effect,
    encode_execution,
    encode_missing,
    encode_network,
    encode_outcome,
    encode_pending,
    encode_protocol,
    encode_read_only,
    encode_receipt,
    encode_request,
    encode_request_id,
    encode_rpc_code,
    encode_tool_call_check,
    encode_transport,
    encode_waiting_for_user,
    has_network,
)
from otel_mcp_health._codec.offered import decode_offered, encode_offered
from otel_mcp_health._codec.server import (
    UNKNOWN_SERVER,
    decode_catalog_key,
    decode_server,
    encode_catalog_key,
    label_attributes,
    scope_material,
)
from otel_mcp_health._codec.session import (
    REQUEST_TOKEN,
    Connection,
    decode_channel,
    decode_channel_open,
    decode_connection,
    decode_digest,
    decode_handshake,
    decode_install_check,
    decode_origin,
    decode_page,
    decode_page_index,
    decode_progress,
    decode_superseded,
    encode_channel,
    encode_clocks,
    encode_connection,
    encode_digest,
    encode_era,
    encode_handshake,
    encode_handshake_result,
    encode_install_check,
    encode_origin,
    encode_page,
    encode_page_index,
    encode_page_result,
    encode_progress_event,
    encode_progress_notification,
    encode_superseded,
    encode_tools_capability,
    encode_versions,
)

__all__ = [
    "REQUEST_TOKEN",
    "UNKNOWN_SERVER",
    "Attributes",
    "Connection",
    "decode_authorization",
    "decode_call",
    "decode_call_approval",
    "decode_cancelled",
    "decode_catalog_key",
    "decode_channel",
    "decode_channel_open",
    "decode_connection",
    "decode_digest",
    "decode_effect",
    "decode_execution",
    "decode_handshake",
    "decode_install_check",
    "decode_offered",
    "decode_origin",
    "decode_outcome",
    "decode_page",
    "decode_page_index",
    "decode_pending",
    "decode_progress",
    "decode_protocol",
    "decode_server",
    "decode_superseded",
    "decode_tool_call_check",
    "decode_transport",
    "decode_waiting_for_user",
    "encode_authorization",
    "encode_call",
    "encode_call_approval",
    "encode_cancelled",
    "encode_catalog_approval",
    "encode_catalog_key",
    "encode_channel",
    "encode_clocks",
    "encode_connection",
    "encode_contract",
    "encode_delivery",
    "encode_digest",
    "encode_effect",
    "encode_era",
    "encode_execution",
    "encode_handshake",
    "encode_handshake_result",
    "encode_install_check",
    "encode_missing",
    "encode_network",
    "encode_offered",
    "encode_origin",
    "encode_outcome",
    "encode_page",
    "encode_page_index",
    "encode_page_result",
    "encode_pending",
    "encode_progress_event",
    "encode_progress_notification",
    "encode_protocol",
    "encode_read_only",
    "encode_receipt",
    "encode_request",
    "encode_request_id",
    "encode_rpc_code",
    "encode_superseded",
    "encode_tool_call_check",
    "encode_tools_capability",
    "encode_transport",
    "encode_versions",
    "encode_waiting_for_user",
    "has_network",
    "label_attributes",
    "present",
    "read_str",
    "scope_material",
]
