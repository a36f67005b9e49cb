"""LiteLLM: ``litellm.completion`` and ``litellm.acompletion``, whatever provider they reach.

The application (or LiteLLM's ``Router``) calls ``litellm.completion(model, messages, ...,
tools=...)`` or ``await litellm.acompletion(...)`` with OpenAI-shaped ``tools`` (``functions``,
the older form, when ``tools`` is absent), which LiteLLM translates for each provider. The hook
wraps those two names on the ``litellm`` package (``from .main import *`` binds them there;
LiteLLM's own calls between them go through ``litellm.main`` and are not read twice), reads the
keyword arguments once the call returned (a streamed completion has sent its request by then)
and records ``litellm``. During the call it marks the context as read: when LiteLLM goes through
the OpenAI or Anthropic SDK, their hooks read nothing, so one request is recorded once. A
``tools`` passed by position is not read (it is the 23rd parameter).
"""

from __future__ import annotations

from typing import Any

from otel_mcp_health.core.offered import OfferedTool
from otel_mcp_health.frameworks import Framework, Patch
from otel_mcp_health.model_requests import _read
from otel_mcp_health.model_requests._read import field
from otel_mcp_health.model_requests._stainless import UNREAD, chat_tool

API = "litellm"


def _function(entry: Any) -> OfferedTool | None:
    """An entry of the older ``functions``: ``{"name", "description", "parameters"}``."""
    return _read.tool(field(entry, "name"), field(entry, "description"), field(entry, "parameters"))


def offered(kwargs: dict[str, Any]) -> tuple[OfferedTool, ...] | None:
    """The function tools a completion's keyword arguments offer (``None``: not read)."""
    tools = kwargs.get("tools")
    if tools is not None:
        return _read.read(API, tools, chat_tool)
    return _read.read(API, kwargs.get("functions"), _function)


def _completion(wrapped: Any, _instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    outer = _read.READING.get() is None
    token = _read.READING.set(API)
    try:
        result = wrapped(*args, **kwargs)
    finally:
        _read.READING.reset(token)
    if outer:
        _read.guarded(API, lambda: offered(kwargs))
    return result


async def _acompletion(
    wrapped: Any, _instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    outer = _read.READING.get() is None
    token = _read.READING.set(API)
    try:
        result = await wrapped(*args, **kwargs)
    finally:
        _read.READING.reset(token)
    if outer:
        _read.guarded(API, lambda: offered(kwargs))
    return result


LITELLM = Framework(
    distribution="litellm",
    supported=">=1.60",
    patches=(
        Patch("litellm", "completion", _completion, ("model", "messages")),
        Patch("litellm", "acompletion", _acompletion, ("model", "messages")),
    ),
    unread=UNREAD,
    missing=None,
)
