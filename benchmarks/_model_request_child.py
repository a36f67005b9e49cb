"""One process of the per-LLM-request case of ``bench_instructions.py``: Chat Completions requests
through the real OpenAI SDK, answered in process (an HTTP transport that returns a fixed answer:
no socket, no server), with or without the instrumentation.

``python _model_request_child.py MODE COUNT TOOLS``: ``MODE`` 0 (plain), 1 (instrumented) or 2
(instrumented, the LLM client hooks unwrapped again: the instrumentation's imports and state
without the reading); ``COUNT`` requests after 20 warm-up ones, each offering ``TOOLS`` tools.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import openai

try:  # the OpenAI SDK's HTTP library (httpx2 from openai 3, httpx before)
    import httpx2 as httpx
except ImportError:  # pragma: no cover - older SDKs
    import httpx  # type: ignore[no-redef]

ANSWER = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "done"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
).encode()


def _answer(_request: Any) -> Any:
    return httpx.Response(200, content=ANSWER, headers={"content-type": "application/json"})


def main() -> None:
    mode, count, tools = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    client = openai.OpenAI(
        api_key="k",
        base_url="http://model.invalid/v1",
        http_client=openai.DefaultHttpxClient(transport=httpx.MockTransport(_answer)),
        max_retries=0,
    )
    offered = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": "Does one thing. " * 10,
                "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
            },
        }
        for i in range(tools)
    ]
    if mode in ("1", "2"):
        from opentelemetry.sdk.trace import TracerProvider

        from otel_mcp_health import McpHealthInstrumentor

        McpHealthInstrumentor().instrument(tracer_provider=TracerProvider())
    if mode == "2":
        from otel_mcp_health.frameworks import _hooks, wrapped
        from otel_mcp_health.model_requests import MODEL_CLIENTS

        for patch in wrapped():
            if any(patch in client.patches for client in MODEL_CLIENTS):
                _hooks._unwrap(patch)
    messages = [{"role": "user", "content": "hi"}]
    for _ in range(20 + count):
        client.chat.completions.create(model="m", messages=messages, tools=offered)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
