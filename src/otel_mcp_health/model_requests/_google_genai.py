"""Google GenAI (``google-genai``): the request dict, once the request is built.

``Models.generate_content`` and ``generate_content_stream`` (sync and ``client.aio``; automatic
function calling calls them once per turn) convert their arguments into a plain dict and pass it
with the API path to ``BaseApiClient.request`` / ``request_streamed`` / ``async_request`` /
``async_request_streamed`` (``google/genai/_api_client.py``), which all build the HTTP request
through the sync ``BaseApiClient._build_request(http_method, path, request_dict, http_options)``.
That dict is what is serialized and sent (``http_options.extra_body`` is merged into it there, in
place). The hook lets the request be built, then reads the dict of a ``post`` to
``{model}:generateContent`` or ``{model}:streamGenerateContent`` (Gemini API and Vertex AI):
``tools[].functionDeclarations[]`` (``function_declarations`` too), each ``name``,
``description`` and ``parameters`` or ``parametersJsonSchema`` (``parameters_json_schema``).
Other tools (Google Search, code execution, retrieval) are the provider's and are not read.
"""

from __future__ import annotations

from typing import Any

from otel_mcp_health.core.offered import OfferedTool
from otel_mcp_health.frameworks import Framework, Patch
from otel_mcp_health.model_requests import _read
from otel_mcp_health.model_requests._read import field
from otel_mcp_health.model_requests._stainless import UNREAD

API = "google_genai"
_METHODS = (":generateContent", ":streamGenerateContent")


def _declarations(tool: Any) -> Any:
    found = field(tool, "functionDeclarations")
    return found if found is not None else field(tool, "function_declarations")


def _declaration(entry: Any) -> OfferedTool | None:
    schema = field(entry, "parametersJsonSchema")
    if schema is None:
        schema = field(entry, "parameters_json_schema")
    if schema is None:
        schema = field(entry, "parameters")
    return _read.tool(field(entry, "name"), field(entry, "description"), schema)


def offered(request_dict: Any) -> tuple[OfferedTool, ...] | None:
    """The function declarations a request dict offers (``None``: not read)."""
    tools = _read.entries(API, field(request_dict, "tools"))
    if tools is None:
        return None
    declarations = _read.flattened(API, tools, _declarations)
    if declarations is None:
        return None
    return tuple(t for t in map(_declaration, declarations) if t is not None)


def _build_request(
    wrapped: Any, _instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    request = wrapped(*args, **kwargs)
    if _read.READING.get() is None:
        _read_built(args, kwargs)
    return request


def _read_built(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    try:
        method = args[0] if args else kwargs.get("http_method")
        path = args[1] if len(args) > 1 else kwargs.get("path")
        if str(method).lower() != "post" or not isinstance(path, str):
            return
        if not path.partition("?")[0].endswith(_METHODS):
            return
        body = args[2] if len(args) > 2 else kwargs.get("request_dict")
        _read.guarded(API, lambda: offered(body))
    except Exception:  # noqa: BLE001 - the request goes on unread
        return


GOOGLE_GENAI = Framework(
    distribution="google-genai",
    supported=">=1.20",
    patches=(
        Patch(
            "google.genai._api_client",
            "BaseApiClient._build_request",
            _build_request,
            ("http_method", "path", "request_dict"),
        ),
    ),
    unread=UNREAD,
    missing=None,
)
