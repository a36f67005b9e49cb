"""The OpenAI SDK: Chat Completions and Responses, every way an application makes a request.

Each case runs the real SDK against the scripted endpoint without and with the real
instrumentation (:func:`~tests.model_requests.harness.compare`): byte-identical request bodies,
an equal result, and the recorder handed exactly the function tools the request offered (hosted
and custom tools are the provider's, never read).
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

from otel_mcp_health.core.offered import OfferedTool
from tests.model_requests.harness import (
    DEFINITIONS,
    MESSAGES,
    OFFERED,
    Drive,
    Recorded,
    compare,
    dumped,
)
from tests.support.scripted_model import ScriptedModel

CHAT_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {"name": n, "parameters": s} | ({"description": d} if d else {}),
    }
    for n, d, s in DEFINITIONS
] + [{"type": "custom", "custom": {"name": "free_text"}}]
RESPONSES_TOOLS: list[Any] = [
    {"type": "function", "name": n, "parameters": s, "strict": False}
    | ({"description": d} if d else {})
    for n, d, s in DEFINITIONS
] + [{"type": "web_search"}]
#: Strict definitions (``.parse()`` accepts only strict function tools).
STRICT = {
    "type": "object",
    "properties": {"title": {"type": "string"}},
    "required": ["title"],
    "additionalProperties": False,
}
STRICT_CHAT = [
    {
        "type": "function",
        "function": {"name": "create_ticket", "description": "Create.", "parameters": STRICT,
                     "strict": True},
    }
]  # fmt: skip
STRICT_RESPONSES = [
    {"type": "function", "name": "create_ticket", "description": "Create.", "parameters": STRICT,
     "strict": True}
]  # fmt: skip
STRICT_OFFERED = (OfferedTool("create_ticket", "Create.", STRICT),)


def _sync(model: ScriptedModel) -> openai.OpenAI:
    return openai.OpenAI(base_url=model.base_url(), api_key="k", max_retries=0)


def _async(model: ScriptedModel) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=model.base_url(), api_key="k", max_retries=0)


def chat_create(model: ScriptedModel) -> Any:
    return dumped(
        _sync(model).chat.completions.create(model="m", messages=MESSAGES, tools=CHAT_TOOLS)
    )


async def chat_create_async(model: ScriptedModel) -> Any:
    client = _async(model)
    got = await client.chat.completions.create(model="m", messages=MESSAGES, tools=CHAT_TOOLS)
    return dumped(got)


def chat_stream(model: ScriptedModel) -> Any:
    stream = _sync(model).chat.completions.create(
        model="m", messages=MESSAGES, tools=CHAT_TOOLS, stream=True
    )
    return dumped(list(stream))


def chat_stream_abandoned(model: ScriptedModel) -> Any:
    stream = _sync(model).chat.completions.create(
        model="m", messages=MESSAGES, tools=CHAT_TOOLS, stream=True
    )
    first = next(iter(stream))
    stream.close()
    return dumped(first)


async def chat_stream_async(model: ScriptedModel) -> Any:
    stream = await _async(model).chat.completions.create(
        model="m", messages=MESSAGES, tools=CHAT_TOOLS, stream=True
    )
    return dumped([chunk async for chunk in stream])


def chat_stream_helper(model: ScriptedModel) -> Any:
    with _sync(model).chat.completions.stream(
        model="m", messages=MESSAGES, tools=STRICT_CHAT
    ) as stream:
        return dumped(stream.get_final_completion())


async def chat_stream_helper_async(model: ScriptedModel) -> Any:
    async with _async(model).chat.completions.stream(
        model="m", messages=MESSAGES, tools=STRICT_CHAT
    ) as stream:
        return dumped(await stream.get_final_completion())


def chat_parse(model: ScriptedModel) -> Any:
    return dumped(
        _sync(model).chat.completions.parse(model="m", messages=MESSAGES, tools=STRICT_CHAT)
    )


def chat_raw(model: ScriptedModel) -> Any:
    raw = _sync(model).chat.completions.with_raw_response.create(
        model="m", messages=MESSAGES, tools=CHAT_TOOLS
    )
    return dumped(raw.parse())


def responses_create(model: ScriptedModel) -> Any:
    return dumped(_sync(model).responses.create(model="m", input="hi", tools=RESPONSES_TOOLS))


async def responses_create_async(model: ScriptedModel) -> Any:
    return dumped(
        await _async(model).responses.create(model="m", input="hi", tools=RESPONSES_TOOLS)
    )


def responses_stream(model: ScriptedModel) -> Any:
    events = _sync(model).responses.create(
        model="m", input="hi", tools=RESPONSES_TOOLS, stream=True
    )
    return dumped(list(events))


def responses_stream_abandoned(model: ScriptedModel) -> Any:
    events = _sync(model).responses.create(
        model="m", input="hi", tools=RESPONSES_TOOLS, stream=True
    )
    first = next(iter(events))
    events.close()
    return dumped(first)


def responses_stream_helper(model: ScriptedModel) -> Any:
    with _sync(model).responses.stream(model="m", input="hi", tools=STRICT_RESPONSES) as stream:
        return dumped(stream.get_final_response())


async def responses_stream_helper_async(model: ScriptedModel) -> Any:
    async with _async(model).responses.stream(
        model="m", input="hi", tools=STRICT_RESPONSES
    ) as stream:
        return dumped(await stream.get_final_response())


def responses_parse(model: ScriptedModel) -> Any:
    return dumped(_sync(model).responses.parse(model="m", input="hi", tools=STRICT_RESPONSES))


async def responses_parse_async(model: ScriptedModel) -> Any:
    return dumped(
        await _async(model).responses.parse(model="m", input="hi", tools=STRICT_RESPONSES)
    )


CASES: list[tuple[Drive, str, tuple[OfferedTool, ...]]] = [
    (chat_create, "openai.chat", OFFERED),
    (chat_create_async, "openai.chat", OFFERED),
    (chat_stream, "openai.chat", OFFERED),
    (chat_stream_abandoned, "openai.chat", OFFERED),
    (chat_stream_async, "openai.chat", OFFERED),
    (chat_stream_helper, "openai.chat", STRICT_OFFERED),
    (chat_stream_helper_async, "openai.chat", STRICT_OFFERED),
    (chat_parse, "openai.chat", STRICT_OFFERED),
    (chat_raw, "openai.chat", OFFERED),
    (responses_create, "openai.responses", OFFERED),
    (responses_create_async, "openai.responses", OFFERED),
    (responses_stream, "openai.responses", OFFERED),
    (responses_stream_abandoned, "openai.responses", OFFERED),
    (responses_stream_helper, "openai.responses", STRICT_OFFERED),
    (responses_stream_helper_async, "openai.responses", STRICT_OFFERED),
    (responses_parse, "openai.responses", STRICT_OFFERED),
    (responses_parse_async, "openai.responses", STRICT_OFFERED),
]


@pytest.mark.parametrize(("drive", "api", "offered"), CASES, ids=[c[0].__name__ for c in CASES])
def test_each_request_records_exactly_what_it_offered(
    drive: Drive, api: str, offered: tuple[OfferedTool, ...], recorded: Recorded
) -> None:
    compare(drive, recorded)
    assert recorded == [(api, offered)]


def test_a_retried_request_is_read_once(recorded: Recorded) -> None:
    """The SDK builds a retried request again: what it offered is read at the first build."""

    def drive(model: ScriptedModel) -> Any:
        model.fail("a", 500, 503)
        client = openai.OpenAI(base_url=model.base_url(), api_key="k", max_retries=2)
        return dumped(
            client.chat.completions.create(model="m", messages=MESSAGES, tools=CHAT_TOOLS)
        )

    hooked = compare(drive, recorded)
    assert len(hooked.bodies) == 3  # two failures, then the answer
    assert recorded == [("openai.chat", OFFERED)]


def test_extra_body_tools_are_what_is_read(recorded: Recorded) -> None:
    """``extra_body`` replaces the body's ``tools``: what is sent is what is read."""

    def drive(model: ScriptedModel) -> Any:
        return dumped(
            _sync(model).chat.completions.create(
                model="m", messages=MESSAGES, tools=CHAT_TOOLS, extra_body={"tools": STRICT_CHAT}
            )
        )

    compare(drive, recorded)
    assert recorded == [("openai.chat", STRICT_OFFERED)]


def test_requests_without_tools_and_other_endpoints_record_nothing(recorded: Recorded) -> None:
    def drive(model: ScriptedModel) -> Any:
        client = _sync(model)
        got = [dumped(client.chat.completions.create(model="m", messages=MESSAGES))]
        try:
            client.embeddings.create(model="e", input="x")  # 404 on the scripted endpoint
        except openai.NotFoundError as error:
            got.append(error.status_code)
        return got

    assert compare(drive, recorded).outcome[1] == 404
    assert recorded == []


def test_an_empty_tools_list_records_an_empty_offer(recorded: Recorded) -> None:
    def drive(model: ScriptedModel) -> Any:
        tools: list[Any] = [{"type": "web_search"}]
        return dumped(_sync(model).responses.create(model="m", input="hi", tools=tools))

    compare(drive, recorded)
    assert recorded == [("openai.responses", ())]


def test_the_instrumentations_own_recorder_changes_nothing() -> None:
    """With the recorder the instrumentation installs (no substitute), the application's bytes
    and result are the same."""
    compare(chat_create, [])
    compare(responses_stream_abandoned, [])
