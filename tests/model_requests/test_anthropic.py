"""The Anthropic SDK: Messages (and the beta Messages), every way an application makes a request.

Each case runs the real SDK against the scripted endpoint without and with the real
instrumentation: byte-identical request bodies, an equal result, and the recorder handed exactly
the custom tools the request offered (server tools are the provider's, never read).
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

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

TOOLS: list[Any] = [
    {"name": n, "input_schema": s} | ({"description": d} if d else {}) for n, d, s in DEFINITIONS
] + [{"type": "web_search_20250305", "name": "web_search"}]
ARGS: dict[str, Any] = {"model": "m", "max_tokens": 64, "messages": MESSAGES, "tools": TOOLS}


def _sync(model: ScriptedModel) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=model.base_url(anthropic=True), api_key="k", max_retries=0)


def _async(model: ScriptedModel) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=model.base_url(anthropic=True), api_key="k", max_retries=0
    )


def create(model: ScriptedModel) -> Any:
    return dumped(_sync(model).messages.create(**ARGS))


async def create_async(model: ScriptedModel) -> Any:
    return dumped(await _async(model).messages.create(**ARGS))


def create_streamed(model: ScriptedModel) -> Any:
    return dumped(list(_sync(model).messages.create(**ARGS, stream=True)))


def stream_abandoned(model: ScriptedModel) -> Any:
    events = _sync(model).messages.create(**ARGS, stream=True)
    first = next(iter(events))
    events.close()
    return dumped(first)


async def create_streamed_async(model: ScriptedModel) -> Any:
    events = await _async(model).messages.create(**ARGS, stream=True)
    return dumped([event async for event in events])


def stream_helper(model: ScriptedModel) -> Any:
    with _sync(model).messages.stream(**ARGS) as stream:
        return dumped(stream.get_final_message())


async def stream_helper_async(model: ScriptedModel) -> Any:
    async with _async(model).messages.stream(**ARGS) as stream:
        return dumped(await stream.get_final_message())


def beta_create(model: ScriptedModel) -> Any:
    return dumped(_sync(model).beta.messages.create(**ARGS))


async def beta_stream_async(model: ScriptedModel) -> Any:
    async with _async(model).beta.messages.stream(**ARGS) as stream:
        return dumped(await stream.get_final_message())


CASES: list[Drive] = [
    create,
    create_async,
    create_streamed,
    stream_abandoned,
    create_streamed_async,
    stream_helper,
    stream_helper_async,
    beta_create,
    beta_stream_async,
]


@pytest.mark.parametrize("drive", CASES, ids=[c.__name__ for c in CASES])
def test_each_request_records_exactly_what_it_offered(drive: Drive, recorded: Recorded) -> None:
    compare(drive, recorded)
    assert recorded == [("anthropic.messages", OFFERED)]


def test_count_tokens_is_not_a_model_request(recorded: Recorded) -> None:
    def drive(model: ScriptedModel) -> Any:
        try:
            _sync(model).messages.count_tokens(model="m", messages=MESSAGES, tools=TOOLS)
        except anthropic.NotFoundError as error:  # no such route on the scripted endpoint
            return error.status_code
        return None

    assert compare(drive, recorded, routed=False).outcome == 404
    assert recorded == []
