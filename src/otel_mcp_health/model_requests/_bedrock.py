"""Amazon Bedrock's Converse API through botocore (boto3's ``bedrock-runtime`` client).

Every operation of every botocore client goes through ``BaseClient._make_api_call(operation_name,
api_params)`` (``botocore/client.py``), with the application's parameters as given, before they
are validated and serialized. The hook reads, for the ``bedrock-runtime`` service's ``Converse``
and ``ConverseStream`` operations only, ``toolConfig.tools[].toolSpec``: ``name``,
``description`` and ``inputSchema.json``; other entries (``cachePoint``, system tools) are
skipped. It reads once the call returned (a request that failed, its parameters refused by
botocore's validation or by the service, was not offered to a model); other services and
operations cost one string comparison.
"""

from __future__ import annotations

from typing import Any

from otel_mcp_health.core.offered import OfferedTool
from otel_mcp_health.frameworks import Framework, Patch
from otel_mcp_health.model_requests import _read
from otel_mcp_health.model_requests._read import field
from otel_mcp_health.model_requests._stainless import UNREAD

API = "bedrock.converse"
_OPERATIONS = ("Converse", "ConverseStream")
_SERVICE = "bedrock-runtime"


def _tool_spec(entry: Any) -> OfferedTool | None:
    spec = field(entry, "toolSpec")
    if spec is None:
        return None
    return _read.tool(
        field(spec, "name"), field(spec, "description"), field(field(spec, "inputSchema"), "json")
    )


def offered(api_params: Any) -> tuple[OfferedTool, ...] | None:
    """The tool specs a Converse request's parameters offer (``None``: not read)."""
    return _read.read(API, field(field(api_params, "toolConfig"), "tools"), _tool_spec)


def _service(client: Any) -> Any:
    return getattr(
        getattr(getattr(client, "meta", None), "service_model", None), "service_name", None
    )


def _make_api_call(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    result = wrapped(*args, **kwargs)
    try:
        operation = args[0] if args else kwargs.get("operation_name")
        if operation in _OPERATIONS and _service(instance) == _SERVICE:
            params = args[1] if len(args) > 1 else kwargs.get("api_params")
            _read.guarded(API, lambda: offered(params))
    except Exception:  # noqa: BLE001 - the call's result goes back unread
        _read.unreadable(API)
    return result


BEDROCK = Framework(
    distribution="botocore",
    supported=">=1.34.116",
    patches=(
        Patch(
            "botocore.client",
            "BaseClient._make_api_call",
            _make_api_call,
            ("operation_name", "api_params"),
        ),
    ),
    unread=UNREAD,
    missing=None,
)
