"""The tie through the model's answer: a tool call the model asked for, then the MCP call.

Some frameworks ask the model in one task and run the tools it asked for in another (LangGraph's
nodes, llama-index's workflow steps), so the tool call does not run in the context of the model
request (:mod:`._agents`'s tie). The model's answer links them instead: it names the tool to call
and its arguments. The LLM-client hooks (:mod:`otel_mcp_health.model_requests`) hand each answer's
tool calls to :func:`record_model_answer`, which keeps them as pending, each with the snapshot of
the request that got the answer; a ``tools/call`` of an MCP tool that one of them names (through
the framework's prefix, :func:`~otel_mcp_health.core.offered.offered_as`) claims it and is tied
to that agent. Of several pending answers naming the tool, the one whose arguments are the
call's (a digest of their canonical JSON) is claimed first, else the oldest; when those answers
are of more than one agent (two agents asking for the same call, or an answer whose call never
ran, still pending), the call cannot be told apart and is judged against each of them, as an
untied call is.

Bounded: at most :data:`MAX_PENDING` answers are pending, holding at most
:data:`MAX_OWNER_BYTES` of snapshots, the oldest forgotten first; an
answer's arguments are kept only as a digest, and not even that past :data:`MAX_ARGUMENTS_BYTES`.
Nothing here is exported.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from otel_mcp_health.core.offered import offered_as
from otel_mcp_health.core.server import CatalogKey

#: Tool calls of answers waiting for their MCP call, at most.
MAX_PENDING: Final = 256
#: The snapshots the pending answers hold, at most (their estimated sizes, each counted once):
#: a snapshot the agents no longer hold stays alive while an answer of it is pending.
MAX_OWNER_BYTES: Final = 8 * 1024 * 1024
#: Arguments larger than this (their JSON) are not digested: the call is claimed by name.
MAX_ARGUMENTS_BYTES: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class Pending:
    """One tool call a model's answer asked for: the name it used, its arguments' digest
    (``None``: not known), and the snapshot of the request that got the answer."""

    name: str
    arguments: str | None
    owner: Any


class Answers:
    """The pending tool calls of the process's model answers (oldest first, bounded)."""

    def __init__(self, max_pending: int = MAX_PENDING, max_bytes: int = MAX_OWNER_BYTES) -> None:
        self._pending: deque[Pending] = deque(maxlen=max_pending)
        self._max_bytes = max_bytes
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._pending)

    def remember(self, owner: Any, calls: Iterable[tuple[str, str | None]]) -> None:
        """The answer to ``owner``'s request asked for ``calls`` (name, arguments digest)."""
        with self._lock:
            self._pending.extend(Pending(name, digest, owner) for name, digest in calls)
            while self._pending and _owner_bytes(self._pending) > self._max_bytes:
                self._pending.popleft()  # the oldest answer, and the snapshot it held

    def claim(
        self, server: CatalogKey, tool: str, arguments: str | None, offers: Any
    ) -> tuple[Any, ...]:
        """The snapshots of the pending answers that named ``tool`` of ``server`` (those with
        these ``arguments`` when any has them), the oldest first, which is taken off the pending
        ones; empty when none did. More than one agent among them: the call cannot be told
        apart (an answer whose call never ran stays pending) and is judged against each.
        ``offers(owner, server, tool)`` says whether an answer's snapshot offered that tool."""
        with self._lock:
            named = [
                p
                for p in self._pending
                if offered_as(p.name, tool) and offers(p.owner, server, tool)
            ]
            if not named:
                return ()
            same = [p for p in named if arguments is not None and p.arguments == arguments]
            pool = same or named
            self._pending.remove(pool[0])
            return tuple(p.owner for p in pool)

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()


def _owner_bytes(pending: Iterable[Pending]) -> int:
    """The estimated bytes of the distinct snapshots ``pending`` holds (``size``, when known)."""
    owners = {id(p.owner): p.owner for p in pending}
    return sum(getattr(owner, "size", 0) for owner in owners.values())


#: The process's pending answers (cleared by ``uninstrument``).
ANSWERS: Final = Answers()


def arguments_digest(arguments: Any) -> str | None:
    """A digest of tool-call arguments as canonical JSON (a JSON string is parsed first), or
    ``None`` when they are not a JSON object or are too large to digest."""
    if isinstance(arguments, str):
        if len(arguments) > MAX_ARGUMENTS_BYTES:
            return None
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, Mapping) or _larger_than(arguments, MAX_ARGUMENTS_BYTES):
        return None
    try:
        text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    if len(text) > MAX_ARGUMENTS_BYTES:
        return None
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _larger_than(value: Any, budget: int) -> bool:
    """Whether ``value`` surely serializes past ``budget`` characters (a lower bound of its
    compact JSON: strings with their quotes, keys with their colon, one character per other
    value and per list separator), found without serializing it: walking stops as soon as
    the budget is spent, so a call's large arguments cost a few steps, not a serialization."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            budget -= len(item) + 2
        elif isinstance(item, Mapping):
            budget -= 2
            for key, member in item.items():
                budget -= (len(key) if isinstance(key, str) else 1) + 3
                stack.append(member)
                if budget < 0:
                    return True
        elif isinstance(item, list | tuple):
            budget -= 1 + len(item)
            stack.extend(item[: max(budget, 0)])
        else:
            budget -= 1
        if budget < 0:
            return True
    return False


__all__ = ["ANSWERS", "MAX_PENDING", "Answers", "Pending", "arguments_digest"]
