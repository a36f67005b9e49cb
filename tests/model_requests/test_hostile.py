"""Hostile ``tools`` values never raise into the application, and what is read stays bounded.

Tool definitions come from MCP servers: attacker-controlled. Each value below goes through the
real OpenAI and Anthropic SDKs, without and with the instrumentation: the application gets the
same response (or the same exception: the SDK's own, unchanged) and the endpoint the same bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from unittest.mock import ANY

import anthropic
import openai
import pydantic
import pytest

from otel_mcp_health.core.offered import OfferedTool
from otel_mcp_health.model_requests import MAX_NAME, MAX_TOOLS
from tests.model_requests.harness import MESSAGES, Recorded, compare, dumped
from tests.support.scripted_model import ScriptedModel

GOOD = {"type": "function", "function": {"name": "good", "parameters": {"type": "object"}}}
GOOD_OFFERED = OfferedTool("good", None, {"type": "object"})


class Raising(dict[str, Any]):
    """A mapping whose reads raise (the SDK may still serialize it)."""

    def get(self, *args: Any) -> Any:
        raise RuntimeError("no")

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("no")


class Function(pydantic.BaseModel):
    name: str
    description: str
    parameters: dict[str, Any]


class Tool(pydantic.BaseModel):
    type: str
    function: Function


def _function(name: str, parameters: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


MEGA_SCHEMA = {
    "type": "object",
    "properties": {f"p{i}": {"type": "string", "description": "d" * 100} for i in range(10_000)},
}
MEGA = {
    "type": "function",
    "function": {"name": "mega", "description": "x" * 1_000_000, "parameters": MEGA_SCHEMA},
}
MANY = [
    {"type": "function", "function": {"name": f"t{i}", "parameters": {}}}
    for i in range(MAX_TOOLS + 1)
]
#: (id, tools value, what the chat request records: None when it is not read)
CHAT: list[tuple[str, Any, list[OfferedTool] | None]] = [
    ("a string", "tools", None),
    ("a mapping", {"name": "x"}, None),
    ("a number", 42, None),
    (
        "entries that are not tools",
        [
            1,
            "x",
            None,
            [GOOD],
            {"type": "function"},
            {"type": "function", "function": "x"},
            {"type": "function", "function": {"name": 5}},
            {"type": "function", "function": {"name": "n" * (MAX_NAME + 1)}},
            {"type": "function", "function": {"name": ""}},
            {"type": "function", "function": {"name": "d", "description": 7, "parameters": 3}},
            GOOD,
        ],
        [OfferedTool("d", None, 3), GOOD_OFFERED],
    ),
    ("megabytes", [MEGA, GOOD], [OfferedTool("mega", "x" * 1_000_000, MEGA_SCHEMA), GOOD_OFFERED]),
    ("more than the bound", MANY, None),
    ("NaN in a schema", [_function("n", {"x": float("nan")})], [OfferedTool("n", None, ANY)]),
    ("a set in a schema", [_function("s", {"x": {1}})], [OfferedTool("s", None, ANY)]),
    ("bytes in a schema", [_function("b", {"x": b"\xff"})], [OfferedTool("b", None, ANY)]),
    ("an object in a schema", [_function("o", object())], [OfferedTool("o", None, ANY)]),
    ("a schema nested past recursion", [_function("r", _nested(5000))], [OfferedTool("r")]),
    ("a mapping that raises", [Raising(GOOD), GOOD], [GOOD_OFFERED, GOOD_OFFERED]),  # sent copied
    (
        "pydantic models",
        [Tool(type="function", function=Function(name="p", description="P", parameters={}))],
        [OfferedTool("p", "P", {})],
    ),
]


def _chat(tools: Any) -> Callable[[ScriptedModel], Any]:
    def drive(model: ScriptedModel) -> Any:
        client = openai.OpenAI(base_url=model.base_url(), api_key="k", max_retries=0)
        return dumped(client.chat.completions.create(model="m", messages=MESSAGES, tools=tools))

    return drive


def _anthropic(tools: Any) -> Callable[[ScriptedModel], Any]:
    def drive(model: ScriptedModel) -> Any:
        client = anthropic.Anthropic(
            base_url=model.base_url(anthropic=True), api_key="k", max_retries=0
        )
        got = client.messages.create(model="m", max_tokens=8, messages=MESSAGES, tools=tools)
        return dumped(got)

    return drive


def _routed(recorded: Recorded, expected: list[OfferedTool] | None, api: str) -> None:
    """What was recorded, when the request was sent: exactly ``expected`` (``None``: nothing);
    a request the SDK refused to send records nothing (or, when built, its readable tools)."""
    if expected is None:
        assert recorded == []
    else:
        assert [(a, [t.name for t in tools]) for a, tools in recorded] in (
            [],
            [(api, [t.name for t in expected])],
        )


@pytest.mark.parametrize(("tools", "expected"), [c[1:] for c in CHAT], ids=[c[0] for c in CHAT])
def test_hostile_chat_tools_never_raise(
    tools: Any, expected: list[OfferedTool] | None, recorded: Recorded
) -> None:
    compare_any(_chat(tools), recorded)
    _routed(recorded, expected, "openai.chat")


def test_a_generator_is_read_as_the_sdk_sent_it(recorded: Recorded) -> None:
    """The hook never iterates what the application passed: it reads the body the SDK built."""

    def drive(model: ScriptedModel) -> Any:
        return _chat(t for t in [GOOD])(model)

    compare(drive, recorded)
    assert recorded == [("openai.chat", (GOOD_OFFERED,))]


def test_well_formed_entries_beside_hostile_ones_are_read_exactly(recorded: Recorded) -> None:
    entries = next(c[1] for c in CHAT if c[0] == "entries that are not tools")
    compare(_chat(entries), recorded)
    assert recorded == [("openai.chat", (OfferedTool("d", None, 3), GOOD_OFFERED))]


def test_schemas_are_handed_on_by_reference(recorded: Recorded) -> None:
    compare(_chat([MEGA, GOOD]), recorded)
    ((_, (mega, good)),) = recorded
    assert mega.description == "x" * 1_000_000
    assert mega.parameters == MEGA_SCHEMA
    assert good == GOOD_OFFERED


def test_more_tools_than_the_bound_are_not_read_and_said_once(
    recorded: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    from otel_mcp_health.model_requests import _read

    _read._WARNED.discard("openai.chat")
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        compare(_chat(MANY), recorded)
        compare(_chat(MANY), recorded)
    assert recorded == []
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert f"offered {MAX_TOOLS + 1} tools, more than the {MAX_TOOLS} read" in warnings[0]


ANTHROPIC: list[tuple[str, Any]] = [
    ("a string", "tools"),
    ("a number", 7),
    ("entries that are not tools", [1, None, {"name": 3}, {"input_schema": {}}, [1]]),
    ("a set in a schema", [{"name": "s", "input_schema": {"x": {1}}}]),
    ("megabytes", [{"name": "mega", "description": "x" * 1_000_000, "input_schema": MEGA_SCHEMA}]),
    ("more than the bound", [{"name": f"t{i}", "input_schema": {}} for i in range(MAX_TOOLS + 1)]),
]


@pytest.mark.parametrize("tools", [c[1] for c in ANTHROPIC], ids=[c[0] for c in ANTHROPIC])
def test_hostile_anthropic_tools_never_raise(tools: Any, recorded: Recorded) -> None:
    compare_any(_anthropic(tools), recorded)
    for api, offered in recorded:
        assert api == "anthropic.messages"
        assert all(isinstance(t.name, str) for t in offered)


def compare_any(drive: Callable[[ScriptedModel], Any], recorded: Recorded) -> None:
    """:func:`compare` for a request the SDK may refuse to send (its own exception, equal)."""
    from tests.model_requests.harness import instrumented, run

    plain = run(drive)
    with instrumented():
        hooked = run(drive)
    assert hooked.bodies == plain.bodies
    assert hooked.outcome == plain.outcome
