"""The scripted LLM API's Google GenAI and Amazon Bedrock Converse routes (wire formats only).

Gemini (``google-genai`` with ``http_options.base_url = {url}/{agent}``):
``POST {agent}/{version}/models/{model}:generateContent`` and ``:streamGenerateContent``
(server-sent events, ``alt=sse``). Bedrock (boto3 ``bedrock-runtime`` with
``endpoint_url = {url}/{agent}``): ``POST {agent}/model/{model}/converse`` and
``/converse-stream`` (the AWS event stream, binary). :mod:`tests.support.scripted_model`
records the requests and picks the answers; this module reads their tools and writes the
answers in each API's format.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

_GEMINI = re.compile(
    r"^[^/]+/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$"
)
_BEDROCK = re.compile(r"^model/(?P<model>[^/]+)/(?P<method>converse|converse-stream)$")


def route(path: str) -> tuple[str, str, bool] | None:
    """(api, model, streamed) of a route below the agent's prefix, or ``None``."""
    if found := _GEMINI.match(path):
        return "gemini", found["model"], found["method"] == "streamGenerateContent"
    if found := _BEDROCK.match(path):
        return "bedrock", unquote(found["model"]), found["method"] == "converse-stream"
    return None


def offered(api: str, body: dict[str, Any]) -> list[str]:
    """The tool names a Gemini or Converse request offered, in order."""
    names: list[str] = []
    if api == "gemini":
        for tool in body.get("tools") or []:
            declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
            names.extend(
                d["name"]
                for d in declarations or []
                if isinstance(d, dict) and isinstance(d.get("name"), str)
            )
        return names
    config = body.get("toolConfig")
    for tool in (config.get("tools") if isinstance(config, dict) else None) or []:
        spec = tool.get("toolSpec") if isinstance(tool, dict) else None
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            names.append(spec["name"])
    return names


def ends_in_result(api: str, body: dict[str, Any]) -> bool:
    """Whether the conversation's last turn carries a tool result."""
    turns = body.get("contents" if api == "gemini" else "messages") or []
    last = turns[-1] if isinstance(turns, list) and turns else None
    parts = last.get("parts" if api == "gemini" else "content") if isinstance(last, dict) else None
    key = "functionResponse" if api == "gemini" else "toolResult"
    return isinstance(parts, list) and any(isinstance(p, dict) and key in p for p in parts)


def answer(
    api: str, model: str, call: tuple[str, str] | None, n: int, streamed: bool
) -> tuple[str, bytes]:
    """(content type, body) of the answer: the scripted call, or the text ``done``."""
    if api == "gemini":
        data = json.dumps(_gemini(model, call))
        if streamed:
            return "text/event-stream", f"data: {data}\r\n\r\n".encode()
        return "application/json", data.encode()
    if streamed:
        events = b"".join(_event(kind, payload) for kind, payload in _converse_events(call, n))
        return "application/vnd.amazon.eventstream", events
    return "application/json", json.dumps(_converse(call, n)).encode()


def _gemini(model: str, call: tuple[str, str] | None) -> dict[str, Any]:
    part: dict[str, Any] = (
        {"text": "done"}
        if call is None
        else {"functionCall": {"name": call[0], "args": json.loads(call[1])}}
    )
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": model,
    }


def _block(call: tuple[str, str] | None, n: int) -> dict[str, Any]:
    if call is None:
        return {"text": "done"}
    return {"toolUse": {"toolUseId": f"tooluse_{n}", "name": call[0], "input": json.loads(call[1])}}


def _converse(call: tuple[str, str] | None, n: int) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [_block(call, n)]}},
        "stopReason": "end_turn" if call is None else "tool_use",
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 1},
    }


def _converse_events(call: tuple[str, str] | None, n: int) -> Iterator[tuple[str, dict[str, Any]]]:
    yield "messageStart", {"role": "assistant"}
    if call is None:
        yield "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "done"}}
    else:
        start = {"toolUse": {"toolUseId": f"tooluse_{n}", "name": call[0]}}
        yield "contentBlockStart", {"contentBlockIndex": 0, "start": start}
        yield (
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"toolUse": {"input": call[1]}}},
        )
    yield "contentBlockStop", {"contentBlockIndex": 0}
    yield "messageStop", {"stopReason": "end_turn" if call is None else "tool_use"}
    yield (
        "metadata",
        {
            "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
            "metrics": {"latencyMs": 1},
        },
    )


def _event(kind: str, payload: dict[str, Any]) -> bytes:
    """One AWS event-stream message: prelude (total length, headers length, CRC), string
    headers, the JSON payload and the message's CRC32."""
    headers = b""
    for name, value in (
        (":event-type", kind),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        raw = value.encode()
        headers += bytes([len(name)]) + name.encode() + b"\x07" + len(raw).to_bytes(2, "big") + raw
    body = json.dumps(payload).encode()
    prelude = (16 + len(headers) + len(body)).to_bytes(4, "big") + len(headers).to_bytes(4, "big")
    message = prelude + zlib.crc32(prelude).to_bytes(4, "big") + headers + body
    return message + zlib.crc32(message).to_bytes(4, "big")
