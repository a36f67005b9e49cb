"""Bounds on server-chosen strings we export (docs/attributes.md#bounds, SECURITY.md).

A server chooses its tool names, its name and version, its session id and the property names of
its schemas; a hostile one can make them a megabyte long or different on every call. Anything of
that kind we export is length-capped (:func:`cap`: a prefix plus a short digest of the whole, so
distinct names stay distinct), and a metric label takes at most a fixed number of distinct values
(:class:`LabelBudget`: later new values fold into :data:`OVERFLOW`). The servers remembered at
once are bounded here too (:data:`MAX_SERVERS`), one bound for both halves.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

MAX_NAME_LENGTH: Final = 128
"""Longest server-chosen string exported on a span or as a metric label (characters)."""
MAX_NAMES: Final = 16
"""Most server-chosen names exported in one list attribute (e.g. missing argument names)."""
MAX_LABEL_VALUES: Final = 1000
"""Most distinct values of one open label (tool name, server) per metric."""
MAX_SERVERS: Final = 1024
"""Most servers whose discovery is remembered at once, in the instrumentation (what a session
without a discovery of its own inherits) and in the span processor (what its sessions share);
least recently used forgotten first."""
MAX_AGENTS: Final = 64
"""Most agents (docs/model.md#agents: one model's set of offered tools, labelled
``<api>/<slot>``) the instrumentation remembers at once, least recently requesting forgotten
first: the slots of an API's labels stay below this, so labels are bounded in cardinality too."""
OVERFLOW: Final = "_overflow"
"""The label value every further distinct value folds into."""
_DIGEST_CHARS: Final = 12


def cap(text: str, limit: int = MAX_NAME_LENGTH) -> str:
    """``text`` itself when short enough, else a prefix, ``~`` and 12 hex digits of its SHA-256."""
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
    return f"{text[: limit - _DIGEST_CHARS - 1]}~{digest}"


def cap_names(names: Iterable[str]) -> list[str]:
    """At most :data:`MAX_NAMES` names, each capped."""
    capped: list[str] = []
    for name in names:
        if len(capped) == MAX_NAMES:
            break
        capped.append(cap(name))
    return capped


class LabelBudget:
    """The distinct values each open label of one metric has taken, up to a limit.

    Only the keys given are bounded (the others are vocabulary values). Safe without a lock: a
    race can admit a few values beyond the limit, never an unbounded number.
    """

    __slots__ = ("_limit", "_seen")

    def __init__(self, keys: Iterable[str], limit: int = MAX_LABEL_VALUES) -> None:
        self._limit = limit
        self._seen: dict[str, set[Any]] = {key: set() for key in keys}

    def apply(self, labels: Mapping[str, Any]) -> dict[str, Any]:
        """``labels`` with each open value capped, or folded into :data:`OVERFLOW`."""
        bounded = dict(labels)
        for key, seen in self._seen.items():
            value = bounded.get(key)
            if value is None or value in seen:
                continue
            if isinstance(value, str):
                value = cap(value)
            if value not in seen and len(seen) >= self._limit:
                value = OVERFLOW
            else:
                seen.add(value)
            bounded[key] = value
        return bounded


__all__ = [
    "MAX_AGENTS",
    "MAX_LABEL_VALUES",
    "MAX_NAMES",
    "MAX_NAME_LENGTH",
    "OVERFLOW",
    "LabelBudget",
    "cap",
    "cap_names",
]
