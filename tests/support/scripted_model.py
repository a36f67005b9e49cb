"""A scripted LLM API on 127.0.0.1: OpenAI Chat Completions and Responses, Anthropic Messages,
Google GenAI (Gemini) and Amazon Bedrock Converse (:mod:`tests.support.scripted_gemini_bedrock`).

Agent frameworks run through their real model clients against it (``base_url`` pointing here), so
what the product reads is the request the model client really sends. Each agent gets its own path
prefix (``{url}/{agent}/v1``, :meth:`ScriptedModel.base_url`) and its own script: a queue of MCP
tool calls (an MCP tool name and arguments). A request whose conversation does not yet end in a
tool result is answered with the next scripted call, addressed to the *offered* tool whose name is
the MCP name or ends with it after a separator (frameworks prefix names: ``plugin-create_ticket``);
every other request, or an empty script, is answered with the text ``done``. Streaming requests
(``"stream": true``) get server-sent events in the API's format.

Every request is recorded with its raw body bytes (:attr:`Request.body`), so tests byte-compare
what the application sent with and without the instrumentation, and read what each request
offered (:attr:`Request.offered`).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support import scripted_gemini_bedrock as gemini_bedrock

#: The creation time every answer carries: answers are deterministic (a request's answer depends
#: only on its body and its number on the endpoint), so results compare equal across runs.
CREATED = 1_767_225_600
#: Separators frameworks put between a prefix and a tool name.
_SEPARATORS = ("-", "_", ".", ":", "__")


@dataclass
class Request:
    """One request the scripted API received."""

    agent: str
    api: str  # "chat", "responses", "anthropic", "gemini" or "bedrock"
    body: bytes
    json: dict[str, Any]
    #: The request's HTTP headers, names lower-cased.
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def offered(self) -> list[str]:
        """The tool names the request offered, in order (any API's shape)."""
        if self.api in ("gemini", "bedrock"):
            return gemini_bedrock.offered(self.api, self.json)
        names = []
        for tool in self.json.get("tools") or []:
            if not isinstance(tool, dict):
                continue
            function = tool.get("function")
            name = function.get("name") if isinstance(function, dict) else tool.get("name")
            if isinstance(name, str):
                names.append(name)
        return names

    def offered_tool(self, name: str) -> dict[str, Any] | None:
        """The offered definition whose name is ``name`` (as the API carries it)."""
        for tool in self.json.get("tools") or []:
            function = tool.get("function") if isinstance(tool, dict) else None
            entry = function if isinstance(function, dict) else tool
            if isinstance(entry, dict) and entry.get("name") == name:
                return entry
        return None


@dataclass
class _Agent:
    script: deque[tuple[str, dict[str, Any]]] = field(default_factory=deque)
    failures: deque[int] = field(default_factory=deque)


class ScriptedModel:
    """The scripted API; use :func:`scripted_model` to run one."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._agents: dict[str, _Agent] = {}
        self._lock = threading.Lock()
        self.url = ""

    def base_url(self, agent: str = "a", *, anthropic: bool = False) -> str:
        """The base URL an agent's model client is given (Anthropic's client adds ``/v1``)."""
        self._agents.setdefault(agent, _Agent())
        return f"{self.url}/{agent}" if anthropic else f"{self.url}/{agent}/v1"

    def script(self, agent: str, *calls: tuple[str, dict[str, Any]]) -> None:
        """Queue MCP tool calls for ``agent``: one per request that does not end in a result."""
        with self._lock:
            self._agents.setdefault(agent, _Agent()).script.extend(calls)

    def fail(self, agent: str, *statuses: int) -> None:
        """Answer ``agent``'s next requests with these HTTP error statuses, one each (recorded
        all the same; ``retry-after-ms: 1`` lets a client retry at once)."""
        with self._lock:
            self._agents.setdefault(agent, _Agent()).failures.extend(statuses)

    def failure(self, agent: str) -> int | None:
        """The error status ``agent``'s current request is answered with, if any."""
        with self._lock:
            failures = self._agents.setdefault(agent, _Agent()).failures
            return failures.popleft() if failures else None

    def of(self, agent: str) -> list[Request]:
        """The requests ``agent`` sent, in order."""
        return [r for r in self.requests if r.agent == agent]

    # -- answering -----------------------------------------------------------------------------
    def answer(
        self, agent: str, api: str, body: bytes, headers: dict[str, str] | None = None
    ) -> tuple[Request, tuple[str, str] | None]:
        """Record the request and choose its answer: (offered tool name, arguments JSON), or
        ``None`` for the text ``done``."""
        parsed = json.loads(body) if body else {}
        request = Request(
            agent, api, body, parsed if isinstance(parsed, dict) else {}, headers or {}
        )
        with self._lock:
            self.requests.append(request)
            queue = self._agents.setdefault(agent, _Agent()).script
            if _ends_in_result(api, request.json) or not queue:
                return request, None
            name, arguments = queue.popleft()
        offered = _offered_name(request.offered, name)
        return request, (offered, json.dumps(arguments))


def _offered_name(offered: list[str], name: str) -> str:
    if name in offered:
        return name
    for candidate in offered:
        if any(candidate.endswith(sep + name) for sep in _SEPARATORS):
            return candidate
    return name  # not offered: the model calls it anyway (a hallucinated tool)


def _ends_in_result(api: str, body: dict[str, Any]) -> bool:
    """Whether the conversation's last item is a tool result (the model then says ``done``)."""
    if api in ("gemini", "bedrock"):
        return gemini_bedrock.ends_in_result(api, body)
    if api == "responses":
        items = body.get("input")
        last = items[-1] if isinstance(items, list) and items else None
        return isinstance(last, dict) and last.get("type") == "function_call_output"
    messages = body.get("messages") or []
    last = messages[-1] if messages else None
    if not isinstance(last, dict):
        return False
    if api == "chat":
        return last.get("role") in ("tool", "function")
    content = last.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


# -- the wire formats -------------------------------------------------------------------------
def _chat(model: str, call: tuple[str, str] | None, n: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None if call else "done"}
    if call is not None:
        message["tool_calls"] = [
            {"id": f"call_{n}", "type": "function",
             "function": {"name": call[0], "arguments": call[1]}}
        ]  # fmt: skip
    return {
        "id": f"chatcmpl-{n}", "object": "chat.completion", "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if call else "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }  # fmt: skip


def _chat_chunks(model: str, call: tuple[str, str] | None, n: int) -> Iterator[dict[str, Any]]:
    base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk",
            "created": CREATED, "model": model}  # fmt: skip
    if call is None:
        delta: dict[str, Any] = {"role": "assistant", "content": "done"}
    else:
        delta = {"role": "assistant", "tool_calls": [
            {"index": 0, "id": f"call_{n}", "type": "function",
             "function": {"name": call[0], "arguments": call[1]}}]}  # fmt: skip
    yield {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    finish = "tool_calls" if call else "stop"
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip


def _responses(model: str, call: tuple[str, str] | None, n: int) -> dict[str, Any]:
    if call is None:
        item: dict[str, Any] = {
            "type": "message", "id": f"msg_{n}", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "done", "annotations": []}],
        }  # fmt: skip
    else:
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                "name": call[0], "arguments": call[1], "status": "completed"}  # fmt: skip
    return {
        "id": f"resp_{n}", "object": "response", "created_at": CREATED,
        "status": "completed", "model": model, "output": [item], "parallel_tool_calls": True,
        "tool_choice": "auto", "tools": [], "error": None, "incomplete_details": None,
        "instructions": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0,
        "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }  # fmt: skip


def _responses_events(model: str, call: tuple[str, str] | None, n: int) -> Iterator[dict[str, Any]]:
    done = _responses(model, call, n)
    started = {**done, "status": "in_progress", "output": []}
    item = done["output"][0]
    yield {"type": "response.created", "sequence_number": 0, "response": started}
    yield {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
           "item": item}  # fmt: skip
    yield {"type": "response.output_item.done", "sequence_number": 2, "output_index": 0,
           "item": item}  # fmt: skip
    yield {"type": "response.completed", "sequence_number": 3, "response": done}


def _anthropic(model: str, call: tuple[str, str] | None, n: int) -> dict[str, Any]:
    if call is None:
        block: dict[str, Any] = {"type": "text", "text": "done"}
    else:
        block = {"type": "tool_use", "id": f"toolu_{n}", "name": call[0],
                 "input": json.loads(call[1])}  # fmt: skip
    return {
        "id": f"msg_{n}", "type": "message", "role": "assistant", "model": model,
        "content": [block], "stop_reason": "tool_use" if call else "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
    }  # fmt: skip


def _anthropic_events(
    model: str, call: tuple[str, str] | None, n: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    message = _anthropic(model, call, n)
    start = {**message, "content": [], "stop_reason": None}
    yield "message_start", {"type": "message_start", "message": start}
    if call is None:
        yield "content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}}  # fmt: skip
        delta: dict[str, Any] = {"type": "text_delta", "text": "done"}
    else:
        block = {"type": "tool_use", "id": f"toolu_{n}", "name": call[0], "input": {}}
        yield "content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": block}  # fmt: skip
        delta = {"type": "input_json_delta", "partial_json": call[1]}
    yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"],
                                      "stop_sequence": None},
                            "usage": {"output_tokens": 1}}  # fmt: skip
    yield "message_stop", {"type": "message_stop"}


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            parts = self.path.split("?")[0].strip("/").split("/")
            agent, route = parts[0], "/".join(parts[1:])
            api = {"v1/chat/completions": "chat", "v1/responses": "responses",
                   "v1/messages": "anthropic"}.get(route)  # fmt: skip
            other = gemini_bedrock.route(route) if api is None else None
            if other is not None:
                api = other[0]
            if api is None:
                self._send(404, {"error": {"message": f"no route {route}"}})
                return
            status = model.failure(agent)
            if status is not None:
                model.answer(agent, api, body, self._headers())
                self._send(status, {"error": {"message": "scripted failure"}})
                return
            request, call = model.answer(agent, api, body, self._headers())
            n, name = len(model.requests), str(request.json.get("model") or "scripted")
            if other is not None:
                self._raw(*gemini_bedrock.answer(api, other[1], call, n, other[2]))
            elif request.json.get("stream") is True:
                self._stream(api, name, call, n)
            elif api == "chat":
                self._send(200, _chat(name, call, n))
            elif api == "responses":
                self._send(200, _responses(name, call, n))
            else:
                self._send(200, _anthropic(name, call, n))

        def _headers(self) -> dict[str, str]:
            return {name.lower(): value for name, value in self.headers.items()}

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status >= 400:
                self.send_header("retry-after-ms", "1")
            self.end_headers()
            self.wfile.write(data)

        def _raw(self, content_type: str, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, api: str, name: str, call: tuple[str, str] | None, n: int) -> None:
            lines: list[str] = []
            if api == "chat":
                lines = [f"data: {json.dumps(c)}\n\n" for c in _chat_chunks(name, call, n)]
                lines.append("data: [DONE]\n\n")
            elif api == "responses":
                lines = [
                    f"event: {e['type']}\ndata: {json.dumps(e)}\n\n"
                    for e in _responses_events(name, call, n)
                ]
            else:
                lines = [
                    f"event: {kind}\ndata: {json.dumps(e)}\n\n"
                    for kind, e in _anthropic_events(name, call, n)
                ]
            data = "".join(lines).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def scripted_model() -> Iterator[ScriptedModel]:
    """A :class:`ScriptedModel` serving on 127.0.0.1 (a free port) for the block's duration."""
    model = ScriptedModel()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(model))
    server.daemon_threads = True
    model.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
