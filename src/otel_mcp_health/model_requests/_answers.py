"""The OpenAI and Anthropic SDKs: the tool calls each answer asks for (the tie, private).

Some frameworks run the tools their model asked for in another task than the model request (see
:mod:`otel_mcp_health.instrumentation._answers`); the answer's tool calls tie them back. The hook
wraps ``SyncAPIClient.request`` / ``AsyncAPIClient.request`` (every API call of both SDKs goes
through them, after ``_build_request`` read the request in the same context) and reads only the
names and arguments of the tool calls of a model answer:

* a parsed answer: Chat Completions' ``choices[].message.tool_calls[].function``, Responses'
  ``output[]`` items of type ``function_call``, Anthropic's ``content[]`` blocks of type
  ``tool_use``;
* a streamed answer (``Stream`` / ``AsyncStream``): its event iterator is wrapped in place (the
  object the application holds stays the same) and the tool calls are assembled from the events
  as the application reads them (Chat Completions' ``delta.tool_calls`` fragments, Responses'
  ``response.output_item.done``, Anthropic's ``tool_use`` block and its ``input_json_delta``
  fragments); what was assembled is recorded when the stream ends, is closed or is abandoned.

* a raw response (``with_raw_response``, as LangChain's ``ChatOpenAI`` asks): read when the
  application parses it, like the answer ``parse`` gives.

Other results (other endpoints) are left alone. Reading never raises into the application and
changes nothing it receives; the arguments become a digest in memory.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

from otel_mcp_health.model_requests._read import field

_logger = logging.getLogger(__name__)

#: Tool calls read from one answer at most (models ask for a handful).
MAX_CALLS = 64
#: Argument fragments of one streamed call kept at most (characters); past it, no digest.
MAX_FRAGMENTS = 64 * 1024


def parsed_calls(result: Any) -> list[tuple[str, Any]]:
    """The tool calls (name, arguments) of a parsed answer of any of the three APIs."""
    calls: list[tuple[Any, Any]] = []
    for choice in _items(field(result, "choices")):
        for call in _items(field(field(choice, "message"), "tool_calls")):
            function = field(call, "function")
            calls.append((field(function, "name"), field(function, "arguments")))
    calls.extend(
        (field(item, "name"), field(item, "arguments"))
        for item in _items(field(result, "output"))
        if field(item, "type") == "function_call"
    )
    if field(result, "type") == "message":
        calls.extend(
            (field(block, "name"), field(block, "input"))
            for block in _items(field(result, "content"))
            if field(block, "type") == "tool_use"
        )
    named: list[tuple[Any, Any]] = calls[:MAX_CALLS]
    return [(n, a) for n, a in named if isinstance(n, str)]


class _Assembly:
    """Tool calls assembled from a stream's events (bounded), recorded once at its end."""

    def __init__(self, record: Any) -> None:
        self._record = record
        self._calls: dict[tuple[str, int], list[Any]] = {}  # key -> [name, fragments, size]
        self._done = False

    def event(self, event: Any) -> None:
        try:
            self._event(event)
        except Exception:  # noqa: BLE001 - an event we cannot read is skipped
            return

    def _event(self, event: Any) -> None:
        kind = field(event, "type")
        if kind == "response.output_item.done":
            item = field(event, "item")
            if field(item, "type") == "function_call":
                index = len(self._calls)
                self._add(("r", index), field(item, "name"), field(item, "arguments"))
            return
        if kind == "content_block_start":
            block = field(event, "content_block")
            if field(block, "type") == "tool_use":
                self._add(("a", _int(field(event, "index"))), field(block, "name"), "")
            return
        if kind == "content_block_delta":
            delta = field(event, "delta")
            if field(delta, "type") == "input_json_delta":
                self._extend(("a", _int(field(event, "index"))), field(delta, "partial_json"))
            return
        for choice in _items(field(event, "choices")):
            for call in _items(field(field(choice, "delta"), "tool_calls")):
                key = ("c", _int(field(choice, "index")) * 1000 + _int(field(call, "index")))
                function = field(call, "function")
                name = field(function, "name")
                if key not in self._calls and isinstance(name, str):
                    self._add(key, name, "")
                self._extend(key, field(function, "arguments"))

    def _add(self, key: tuple[str, int], name: Any, arguments: Any) -> None:
        if isinstance(name, str) and len(self._calls) < MAX_CALLS:
            self._calls[key] = [name, [arguments] if isinstance(arguments, str) else [], 0]

    def _extend(self, key: tuple[str, int], fragment: Any) -> None:
        entry = self._calls.get(key)
        if entry is None or not isinstance(fragment, str) or entry[2] > MAX_FRAGMENTS:
            return
        entry[1].append(fragment)
        entry[2] += len(fragment)

    def finish(self) -> None:
        if self._done:
            return
        self._done = True
        calls = [
            (name, "".join(parts) if size <= MAX_FRAGMENTS else None)
            for name, parts, size in self._calls.values()
        ]
        if calls:
            self._record(calls)


def _observed(iterator: Iterator[Any], assembly: _Assembly) -> Iterator[Any]:
    try:
        for event in iterator:
            assembly.event(event)
            yield event
    finally:
        assembly.finish()


async def _observed_async(iterator: AsyncIterator[Any], assembly: _Assembly) -> AsyncIterator[Any]:
    try:
        async for event in iterator:
            assembly.event(event)
            yield event
    finally:
        assembly.finish()


def answered(result: Any, record: Any) -> None:
    """Read the tool calls of ``result`` (what ``request`` returned) into ``record(calls)``:
    at once for a parsed answer, as the application reads it for a stream. Never raises."""
    try:
        iterator = getattr(result, "_iterator", None)
        if iterator is None and _raw_answer(result, record):
            return
        if iterator is None:
            calls = parsed_calls(result)
            if calls:
                record(calls)
            return
        assembly = _Assembly(record)
        if hasattr(iterator, "__anext__"):
            # the stream's own iterator, replaced in place: the object the application holds,
            # and every helper that iterates it, stay the same
            result._iterator = _observed_async(iterator, assembly)  # noqa: SLF001
        elif hasattr(iterator, "__next__"):
            result._iterator = _observed(iterator, assembly)  # noqa: SLF001
    except Exception:
        _logger.debug("otel-mcp-health: a model answer was not read", exc_info=True)


def _raw_answer(result: Any, record: Any) -> bool:
    """Whether ``result`` is a raw response (``with_raw_response``, ``with_streaming_response``:
    the SDKs' ``LegacyAPIResponse`` / ``APIResponse`` / ``AsyncAPIResponse``, which keep their
    parsed bodies in ``_parsed_by_type``). Its answer is read when the application parses it:
    ``parse`` is wrapped on the instance, and the first parse into the SDK's own type is read
    like any answer (a stream then as it is read). The application gets what ``parse`` gives."""
    parse = getattr(result, "parse", None)
    if not isinstance(getattr(result, "_parsed_by_type", None), dict) or not callable(parse):
        return False
    unread = [True]

    def read(parsed: Any, kwargs: dict[str, Any]) -> None:
        if unread[0] and kwargs.get("to") is None:
            unread[0] = False
            answered(parsed, record)

    if inspect.iscoroutinefunction(parse):

        async def parse_async(*args: Any, **kwargs: Any) -> Any:
            parsed = await parse(*args, **kwargs)
            read(parsed, kwargs)
            return parsed

        result.parse = parse_async
    else:

        def parse_sync(*args: Any, **kwargs: Any) -> Any:
            parsed = parse(*args, **kwargs)
            read(parsed, kwargs)
            return parsed

        result.parse = parse_sync
    return True


def _items(value: Any) -> list[Any] | tuple[Any, ...]:
    return value if isinstance(value, (list, tuple)) else ()


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _recorder() -> Any:
    """The instrumentation's recorder of this context's model answer (looked up on the module
    each time, so a test can put its own there), or ``None``."""
    try:
        from otel_mcp_health import instrumentation

        return instrumentation.answer_recorder()
    except Exception:  # noqa: BLE001 - no recorder: the answer is not read
        return None


def request_hook(
    wrapped: Any, _instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``SyncAPIClient.request``: the answer, read once the request returned."""
    result = wrapped(*args, **kwargs)
    record = _recorder()
    if record is not None:
        answered(result, record)
    return result


async def async_request_hook(
    wrapped: Any, _instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``AsyncAPIClient.request``: the answer, read once the request returned."""
    result = await wrapped(*args, **kwargs)
    record = _recorder()
    if record is not None:
        answered(result, record)
    return result
