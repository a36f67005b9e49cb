"""The OpenAI and Anthropic Python SDKs: the request body, once it is built.

Both SDKs are generated from one template: every API call, whatever helper made it (``create``
with or without ``stream=True``, ``.stream()``, ``.parse()``, ``with_raw_response``,
``with_streaming_response``, the beta namespaces, the Azure client), ends in
``BaseClient._build_request(options, *, retries_taken=0)`` (``openai/_base_client.py``,
``anthropic/_base_client.py``), sync for the sync and the async client alike. ``options`` is the
``FinalRequestOptions`` the body is serialized from: ``options.url`` (the API path) and
``options.json_data`` (the body, already transformed into plain JSON values), with
``options.extra_json`` (the application's ``extra_body``) merged over it at the top level.

The hook lets the request be built (a request that fails to build was never sent), then reads the
``tools`` of a ``POST`` to a model path: ``/chat/completions`` (``openai.chat``), ``/responses``
(``openai.responses``), ``/v1/messages`` (``anthropic.messages``, beta too). A retry builds the
request again: only the first build is read (``retries_taken == 0``). Other paths (embeddings,
files, ``count_tokens``, the Bedrock and Vertex Anthropic clients, which move the model into the
path) are not read.
"""

from __future__ import annotations

from typing import Any

from otel_mcp_health.core.offered import OfferedTool
from otel_mcp_health.frameworks import Framework, Patch
from otel_mcp_health.model_requests import _read
from otel_mcp_health.model_requests._answers import async_request_hook, request_hook
from otel_mcp_health.model_requests._read import field

#: What a refused hook loses (the refusal's warning says it).
UNREAD = "the tools its requests offer the model are not read"


def chat_tool(entry: Any) -> OfferedTool | None:
    """``{"type": "function", "function": {"name", "description", "parameters"}}`` (Chat
    Completions and LiteLLM); custom (free-form) tools are not functions and are skipped."""
    function = field(entry, "function")
    if function is None or field(entry, "type") not in ("function", None):
        return None
    return _read.tool(
        field(function, "name"), field(function, "description"), field(function, "parameters")
    )


def responses_tool(entry: Any) -> OfferedTool | None:
    """``{"type": "function", "name", "description", "parameters"}``; hosted tools (web search,
    file search, remote MCP) run on the provider's side and are skipped."""
    if field(entry, "type") != "function":
        return None
    return _read.tool(field(entry, "name"), field(entry, "description"), field(entry, "parameters"))


def anthropic_tool(entry: Any) -> OfferedTool | None:
    """``{"name", "description", "input_schema"}`` (``type`` absent or ``"custom"``); server
    tools (``bash_20250124``, ``web_search_...``) are the provider's and are skipped."""
    if field(entry, "type") not in ("custom", None):
        return None
    return _read.tool(
        field(entry, "name"), field(entry, "description"), field(entry, "input_schema")
    )


#: (path suffix, api, entry reader) for each SDK, in the order tried.
_OPENAI = (("/chat/completions", "openai.chat", chat_tool),)
_OPENAI_RESPONSES = (("/responses", "openai.responses", responses_tool),)
_ANTHROPIC = (("/v1/messages", "anthropic.messages", anthropic_tool),)


def _tools(options: Any) -> Any:
    """The ``tools`` the built body carries: ``extra_body``'s when it sets them, else the body's."""
    extra = field(options, "extra_json")
    if isinstance(extra, dict) and "tools" in extra:
        return extra["tools"]
    return field(field(options, "json_data"), "tools")


def _hook(paths: tuple[tuple[str, str, _read.Entry], ...]) -> Any:
    def _build_request(
        wrapped: Any, _instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        request = wrapped(*args, **kwargs)
        if kwargs.get("retries_taken", 0) == 0 and _read.READING.get() is None:
            _read_built(paths, args[0] if args else kwargs.get("options"))
        return request

    return _build_request


def _read_built(paths: tuple[tuple[str, str, _read.Entry], ...], options: Any) -> None:
    """Record the tools of a model request's ``options`` (other requests: nothing). Never raises."""
    try:
        url = field(options, "url")
        if not isinstance(url, str) or str(field(options, "method")).lower() != "post":
            return
        path = url.partition("?")[0]
        for suffix, api, entry in paths:
            if path.endswith(suffix):
                _read.guarded(api, lambda: _read.read(api, _tools(options), entry))  # noqa: B023
                return
    except Exception:  # noqa: BLE001 - the request goes on unread
        return


OPENAI = Framework(
    distribution="openai",
    supported=">=1.40",
    patches=(
        Patch(
            "openai._base_client",
            "BaseClient._build_request",
            _hook(_OPENAI + _OPENAI_RESPONSES),
            ("options",),
        ),
        Patch("openai._base_client", "SyncAPIClient.request", request_hook),
        Patch("openai._base_client", "AsyncAPIClient.request", async_request_hook),
    ),
    unread=UNREAD,
    missing=None,
)

ANTHROPIC = Framework(
    distribution="anthropic",
    supported=">=0.40",
    patches=(
        Patch(
            "anthropic._base_client", "BaseClient._build_request", _hook(_ANTHROPIC), ("options",)
        ),
        Patch("anthropic._base_client", "SyncAPIClient.request", request_hook),
        Patch("anthropic._base_client", "AsyncAPIClient.request", async_request_hook),
    ),
    unread=UNREAD,
    missing=None,
)
