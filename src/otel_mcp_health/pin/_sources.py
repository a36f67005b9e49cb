"""Where the tools to pin come from: what every source hands the command, and ``tools/list``
JSON files.

A source yields the tool definitions as JSON objects (the wire form the instrumentation
digests), a provenance tag for the pin file (``live``, ``file``, ``mcpb:sha256:<hex>``), whether
its pins are partial (only the members each tool states are pinned), and the server label it
knows itself (the handshake's, or an MCPB bundle's static ``initialize``), if any.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from otel_mcp_health._files import ReadFailure, say_read_failure
from otel_mcp_health.pin._errors import PinInputError

#: A JSON source larger than this is refused before it is parsed (a tools/list of 10,000 tools
#: with large schemas stays well below it).
MAX_JSON_BYTES: Final = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Source:
    """The tools to pin and what the source says about them."""

    tools: tuple[Mapping[str, Any], ...]
    tag: str
    #: Partial pins: each tool pins only the members it states (an MCPB manifest's name and
    #: description); the other members are not compared at run time.
    partial: bool = False
    #: The server's own name, address and port, when the source knows them (literal, not globs).
    name: str | None = None
    address: str | None = None
    port: int | None = None
    #: Remarks printed on standard error (never a description or schema).
    notes: tuple[str, ...] = field(default=())


def read_bytes(path: str, what: str, cap: int = MAX_JSON_BYTES) -> bytes:
    """At most ``cap`` bytes of ``path``; a larger or unreadable file is an input error."""
    try:
        with Path(path).open("rb") as handle:
            data = handle.read(cap + 1)
    except OSError as exc:
        words = {
            ReadFailure.MISSING: f"no such {what}",
            ReadFailure.NOT_A_FILE: f"is a directory, expected a {what}",
            ReadFailure.UNREADABLE: f"cannot read the {what} ({{os}})",
        }
        raise PinInputError(f"{path}: {say_read_failure(exc, words)}") from None
    if len(data) > cap:
        raise PinInputError(f"{path}: the {what} is larger than {cap} bytes")
    return data


def parse_json(data: bytes, shown: str) -> Any:
    """``data`` as JSON (UTF-8, a BOM accepted); the message never quotes the content."""
    try:
        return json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise PinInputError(f"{shown}: not UTF-8 text") from None
    except (ValueError, RecursionError):
        raise PinInputError(f"{shown}: not valid JSON") from None


def tool_objects(value: object, shown: str) -> tuple[Mapping[str, Any], ...]:
    """A list of tool objects, each with a string ``name``, no name twice."""
    if not isinstance(value, list):
        raise PinInputError(f"{shown}: the tools are not a JSON array")
    seen: set[str] = set()
    for index, tool in enumerate(value):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise PinInputError(f"{shown}: tool #{index} is not an object with a string name")
        if tool["name"] in seen:
            raise PinInputError(f"{shown}: tool #{index} repeats the name of an earlier tool")
        seen.add(tool["name"])
    return tuple(value)


def tools_file(path: str) -> Source:
    """A ``tools/list`` result (``{"tools": [...]}``, also inside a JSON-RPC response) or a bare
    JSON array of tools: full pins (every projected member, present or absent)."""
    document = parse_json(read_bytes(path, "tools/list file"), path)
    if isinstance(document, dict) and isinstance(document.get("result"), dict):
        document = document["result"]
    if isinstance(document, dict) and "tools" in document:
        if document.get("nextCursor") is not None:
            raise PinInputError(f"{path}: one page of a paginated tools/list; give every tool")
        document = document["tools"]
    if not isinstance(document, list):
        msg = f'{path}: expected a tools/list result ({{"tools": [...]}}) or a JSON array of tools'
        raise PinInputError(msg)
    return Source(tool_objects(document, path), "file")
