"""LiteLLM: completion and acompletion, through the OpenAI SDK (``openai/...``) and through its
own HTTP client (``anthropic/...``), against the scripted endpoint. Each request is read once,
as ``litellm``: the OpenAI SDK's hook sees LiteLLM reading and reads nothing. Runs in the
``model_clients`` cell of noxfile.py.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from otel_mcp_health.core.offered import OfferedTool
from tests.model_requests.harness import DEFINITIONS, MESSAGES, OFFERED, Drive, Recorded, compare
from tests.support.scripted_model import ScriptedModel

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import
import litellm

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {"name": n, "parameters": s} | ({"description": d} if d else {}),
    }
    for n, d, s in DEFINITIONS
]


def _args(model: ScriptedModel, provider: str) -> dict[str, Any]:
    base = model.base_url(anthropic=True) if provider == "anthropic" else model.base_url()
    return {
        "model": f"{provider}/m",
        "messages": MESSAGES,
        "tools": TOOLS,
        "api_base": base,
        "api_key": "k",
        "max_tokens": 16,
        "num_retries": 0,
    }


def _text(response: Any) -> Any:
    """What the application reads of a response (LiteLLM's own ids and timings vary per call)."""
    message = response.choices[0].message
    calls = [(c.function.name, c.function.arguments) for c in message.tool_calls or []]
    return message.content, calls


def completion_openai(model: ScriptedModel) -> Any:
    return _text(litellm.completion(**_args(model, "openai")))


async def acompletion_openai(model: ScriptedModel) -> Any:
    return _text(await litellm.acompletion(**_args(model, "openai")))


def completion_openai_stream(model: ScriptedModel) -> Any:
    chunks = litellm.completion(**_args(model, "openai"), stream=True)
    return [c.choices[0].delta.content for c in chunks]


def completion_anthropic(model: ScriptedModel) -> Any:
    return _text(litellm.completion(**_args(model, "anthropic")))


async def acompletion_anthropic_stream(model: ScriptedModel) -> Any:
    chunks = await litellm.acompletion(**_args(model, "anthropic"), stream=True)
    return [c.choices[0].delta.content async for c in chunks]


CASES: list[Drive] = [
    completion_openai,
    acompletion_openai,
    completion_openai_stream,
    completion_anthropic,
    acompletion_anthropic_stream,
]


@pytest.mark.parametrize("drive", CASES, ids=[c.__name__ for c in CASES])
def test_each_request_is_read_once_as_litellm(drive: Drive, recorded: Recorded) -> None:
    compare(drive, recorded)
    assert recorded == [("litellm", OFFERED)]


def test_through_the_openai_sdk_the_request_is_still_read_once(recorded: Recorded) -> None:
    """``openai/...`` goes through the OpenAI SDK (its headers say so), whose hook reads nothing."""
    hooked: list[dict[str, str]] = []

    def drive(model: ScriptedModel) -> Any:
        got = completion_openai(model)
        hooked.extend(request.headers for request in model.requests)
        return got

    compare(drive, recorded)
    assert [h.get("x-stainless-lang") for h in hooked] == ["python", "python"]  # both runs
    assert recorded == [("litellm", OFFERED)]


def test_the_older_functions_argument_is_read(recorded: Recorded) -> None:
    def drive(model: ScriptedModel) -> Any:
        args = _args(model, "openai")
        args["functions"] = [tool["function"] for tool in args.pop("tools")]
        return _text(litellm.completion(**args))

    compare(drive, recorded)
    assert recorded == [("litellm", OFFERED)]


@pytest.mark.parametrize("tools", ["tools", [1, None, {"type": "function"}], [{"x": {1}}]])
def test_hostile_tools_never_raise(tools: Any, recorded: Recorded) -> None:
    """What LiteLLM does with them is its own (an answer or its exception, unchanged)."""
    from tests.model_requests.test_hostile import compare_any

    def drive(model: ScriptedModel) -> Any:
        return _text(litellm.completion(**(_args(model, "openai") | {"tools": tools})))

    compare_any(drive, recorded)
    assert all(api == "litellm" and offered == () for api, offered in recorded)


def test_pydantic_tools_are_read_as_attributes(recorded: Recorded) -> None:
    """LiteLLM's keyword arguments are read as given: a pydantic model is read by attribute."""
    from tests.model_requests.test_hostile import Function, Tool, compare_any

    tools = [Tool(type="function", function=Function(name="p", description="P", parameters={}))]

    def drive(model: ScriptedModel) -> Any:
        return _text(litellm.completion(**(_args(model, "openai") | {"tools": tools})))

    compare_any(drive, recorded)
    assert recorded == [("litellm", (OfferedTool("p", "P", {}),))]
