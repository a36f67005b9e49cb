"""The request shapes of Google GenAI, LiteLLM and Bedrock Converse, read without the libraries.

The libraries themselves run in the ``model_clients`` cell (test_google_genai.py,
test_litellm.py, test_bedrock.py: the real clients against the scripted API). Here, in every
cell, the hook functions get the arguments those libraries hand their hook points (the request
dict Google GenAI serializes, LiteLLM's keyword arguments, botocore's operation and parameters),
so what is read, what is skipped and what is never raised is checked where the libraries are
not installed.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from otel_mcp_health.core.offered import OfferedTool
from otel_mcp_health.model_requests import _bedrock, _google_genai, _litellm
from otel_mcp_health.model_requests._read import MAX_TOOLS
from tests.model_requests.harness import Recorded

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"title": {"type": "string"}}}
TICKET = OfferedTool("create_ticket", "Creates a ticket.", SCHEMA)


def _returns(value: Any) -> Any:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return value

    return wrapped


def test_google_genai_reads_every_declaration_of_a_generate_request(recorded: Recorded) -> None:
    body = {
        "contents": [{"parts": [{"text": "a prompt never read"}]}],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "create_ticket",
                        "description": "Creates a ticket.",
                        "parametersJsonSchema": SCHEMA,
                    }
                ]
            },
            {"function_declarations": [{"name": "fail", "parameters": {"type": "OBJECT"}}]},
            {"googleSearch": {}},  # the provider's tool: no declarations
        ],
    }
    built = object()
    wrapped = _returns(built)
    path = "models/m:generateContent"
    assert _google_genai._build_request(wrapped, None, ("post", path, body), {}) is built
    assert recorded == [("google_genai", (TICKET, OfferedTool("fail", None, {"type": "OBJECT"})))]
    # other methods and paths are not read
    _google_genai._build_request(wrapped, None, ("get", path, body), {})
    _google_genai._build_request(wrapped, None, ("post", "models/m:countTokens", body), {})
    assert len(recorded) == 1


def test_google_genai_hostile_bodies_are_not_read_and_never_raise(recorded: Recorded) -> None:
    wrapped = _returns("built")
    for body in (None, {"tools": "x"}, {"tools": [{"functionDeclarations": 3}]}, [1]):
        path = "models/m:streamGenerateContent?alt=sse"
        assert _google_genai._build_request(wrapped, None, ("post", path, body), {}) == "built"
    many = {"tools": [{"functionDeclarations": [{"name": f"t{n}"} for n in range(MAX_TOOLS + 1)]}]}
    assert _google_genai.offered(many) is None
    assert recorded == [("google_genai", ())]  # the one empty declaration list


def test_litellm_reads_tools_or_functions_once(recorded: Recorded) -> None:
    tools = [{"type": "function", "function": {"name": "create_ticket",
                                               "description": "Creates a ticket.",
                                               "parameters": SCHEMA}}]  # fmt: skip
    assert _litellm._completion(_returns("answer"), None, (), {"tools": tools}) == "answer"
    functions = [
        {"name": "create_ticket", "description": "Creates a ticket.", "parameters": SCHEMA}
    ]
    result = asyncio.run(
        _litellm._acompletion(_async_returns("a"), None, (), {"functions": functions})
    )
    assert result == "a"
    assert recorded == [("litellm", (TICKET,)), ("litellm", (TICKET,))]


def test_litellm_through_itself_reads_the_outer_call_only(recorded: Recorded) -> None:
    tools = [{"type": "function", "function": {"name": "create_ticket"}}]

    def inner(*args: Any, **kwargs: Any) -> str:
        return str(_litellm._completion(_returns("inner"), None, (), {"tools": tools}))

    assert _litellm._completion(inner, None, (), {"tools": tools}) == "inner"
    assert recorded == [("litellm", (OfferedTool("create_ticket"),))]


def test_litellm_raises_what_the_library_raised(recorded: Recorded) -> None:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("the library's own error")

    with pytest.raises(ValueError, match="the library's own error"):
        _litellm._completion(refused, None, (), {"tools": []})
    assert recorded == []  # a request the library refused is not read


def test_bedrock_reads_converse_tool_specs_of_the_runtime_only(recorded: Recorded) -> None:
    runtime = SimpleNamespace(meta=SimpleNamespace(service_model=SimpleNamespace(
        service_name="bedrock-runtime")))  # fmt: skip
    other = SimpleNamespace(meta=SimpleNamespace(service_model=SimpleNamespace(service_name="s3")))
    params = {
        "messages": [{"role": "user", "content": [{"text": "never read"}]}],
        "toolConfig": {"tools": [
            {"toolSpec": {"name": "create_ticket", "description": "Creates a ticket.",
                          "inputSchema": {"json": SCHEMA}}},
            {"cachePoint": {"type": "default"}},
        ]},
    }  # fmt: skip
    wrapped = _returns({"output": {}})
    assert _bedrock._make_api_call(wrapped, runtime, ("Converse", params), {}) == {"output": {}}
    _bedrock._make_api_call(wrapped, runtime, ("ListFoundationModels", params), {})
    _bedrock._make_api_call(wrapped, other, ("Converse", params), {})
    _bedrock._make_api_call(wrapped, runtime, ("ConverseStream", {"toolConfig": 7}), {})
    assert recorded == [("bedrock.converse", (TICKET,))]


def _async_returns(value: Any) -> Any:
    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        return value

    return wrapped
