"""What a model was offered, mapped back to MCP tools and compared (core/offered.py).

The rewritten definitions below are the ones frameworks were measured to send
(docs/frameworks.md#rewriting); each must map to its MCP tool and compare as the same definition,
while a real change (description, an added or retyped property) must not.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from otel_mcp_health.core.install import install_reason
from otel_mcp_health.core.offered import (
    MAX_SCHEMA_DEPTH,
    OfferedTool,
    ToolForm,
    ToolIndex,
    compare_offered,
    form_differences,
    offered_form,
    reduced_schema,
    tool_form,
)
from otel_mcp_health.core.reasons import Reason

TICKET: dict[str, Any] = {
    "name": "create_ticket",
    "description": "Creates a ticket.",
    "inputSchema": {
        "type": "object",
        "properties": {"title": {"type": "string"}, "priority": {"type": "string"}},
        "required": ["title"],
    },
}
FAIL: dict[str, Any] = {
    "name": "fail",
    "description": "Returns isError.",
    "inputSchema": {"type": "object", "properties": {}},
}
ADDED: dict[str, Any] = {"name": "added_tool", "description": "Added.", "inputSchema": {}}


def _forms(*tools: dict[str, Any]) -> dict[str, ToolForm]:
    return {t["name"]: tool_form(t) for t in tools}


def _offered(name: str, description: str | None, parameters: Any) -> OfferedTool:
    return OfferedTool(name=name, description=description, parameters=parameters)


STRICT = {  # pydantic-ai / openai strict mode: every property required, no extra properties
    "type": "object",
    "properties": {"title": {"type": "string"}, "priority": {"type": ["string", "null"]}},
    "required": ["title", "priority"],
    "additionalProperties": False,
}
ROUND_TRIP = {  # autogen, llama-index: through a pydantic model and back
    "title": "create_ticketArgs",
    "type": "object",
    "properties": {
        "title": {"title": "Title", "type": "string", "description": "The title"},
        "priority": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "default": None,
            "title": "Priority",
        },
    },
    "required": ["title"],
    "additionalProperties": False,
}
SMOLAGENTS = {  # optional properties made required and nullable
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "see tool"},
        "priority": {"type": "string", "nullable": True, "description": "see tool"},
    },
    "required": ["title", "priority"],
}
REFS = {
    "type": "object",
    "properties": {"title": {"$ref": "#/$defs/Title"}, "priority": {"$ref": "#/$defs/P"}},
    "$defs": {"Title": {"type": "string", "title": "T"}, "P": {"type": "string"}},
}


@pytest.mark.parametrize("schema", [TICKET["inputSchema"], STRICT, ROUND_TRIP, SMOLAGENTS, REFS])
def test_framework_rewrites_are_the_same_definition(schema: dict[str, Any]) -> None:
    offered = offered_form(_offered("create_ticket", "Creates a ticket.", schema))
    assert form_differences(offered, tool_form(TICKET)) == ()


def test_real_changes_are_named_by_member() -> None:
    discovered = tool_form(TICKET)
    described = offered_form(_offered("x", "Creates a ticket (v2).", TICKET["inputSchema"]))
    assert form_differences(described, discovered) == ("description",)
    fewer = copy.deepcopy(TICKET["inputSchema"])
    del fewer["properties"]["priority"]
    assert form_differences(offered_form(_offered("x", None, fewer)), discovered) == (
        "inputSchema",
    )
    retyped = copy.deepcopy(TICKET["inputSchema"])
    retyped["properties"]["title"]["type"] = "integer"
    both = offered_form(_offered("x", "Other.", retyped))
    assert form_differences(both, discovered) == ("description", "inputSchema")


def test_descriptions_dropped_or_shortened_are_the_same() -> None:
    long = {**TICKET, "description": "Creates a ticket in the tracker. " * 20}
    discovered = tool_form(long)
    for description in (None, "", long["description"][:40] + "...", long["description"][:300]):
        offered = offered_form(_offered("t", description, TICKET["inputSchema"]))
        assert form_differences(offered, discovered) == (), description
    for older in ("Creates...", long["description"][:64]):  # too short, or no ellipsis
        offered = offered_form(_offered("t", older, TICKET["inputSchema"]))
        assert form_differences(offered, discovered) == ("description",), older
    # a tool without a description: whatever a framework fills in (semantic-kernel: a docstring)
    bare = tool_form({**TICKET, "description": None})
    filled = offered_form(_offered("t", "partial(func, *args, **keywords)", TICKET["inputSchema"]))
    assert form_differences(filled, bare) == ()
    # whitespace is collapsed on both sides (docstrings re-indented)
    spaced = offered_form(_offered("t", "  Creates   a\n ticket. ", TICKET["inputSchema"]))
    assert form_differences(spaced, tool_form(TICKET)) == ()


def test_a_property_named_like_a_keyword_is_kept() -> None:
    schema = {"type": "object", "properties": {"title": {"type": "string"}}}
    renamed = {"type": "object", "properties": {"description": {"type": "string"}}}
    assert reduced_schema(schema) != reduced_schema(renamed)


def test_names_map_through_prefixes_and_sanitising() -> None:
    index = ToolIndex({"s1": [_forms(TICKET, FAIL)], "s2": [_forms({**ADDED, "name": "a.b c"})]})
    params = TICKET["inputSchema"]
    mapped = index.map(
        [
            _offered("changing-create_ticket", "Creates a ticket.", params),  # semantic-kernel
            _offered("fail", "Returns isError.", {}),
            _offered("a_b_c", "Added.", {}),  # sanitised
            _offered("final_answer", "Gives the answer.", {}),  # the application's own
            _offered("lookup", "Not an MCP tool.", {}),
        ]
    )
    assert {k: sorted(v) for k, v in mapped.items()} == {
        "s1": ["create_ticket", "fail"],
        "s2": ["a.b c"],
    }


def test_a_prefixed_name_with_an_unknown_definition_is_the_applications_own() -> None:
    index = ToolIndex({"s": [_forms({**FAIL, "name": "answer"})]})
    assert index.map([_offered("final_answer", "Gives the final answer.", {})]) == {}
    # the exact name is always the MCP tool's, however its definition changed
    mapped = index.map([_offered("answer", "Changed.", {})])
    assert list(mapped["s"]) == ["answer"]


def test_of_two_servers_the_one_whose_definition_is_carried_is_chosen() -> None:
    other = {**TICKET, "description": "Creates a bug."}
    index = ToolIndex({"a": [_forms(TICKET)], "b": [_forms(other)]})
    assert list(
        index.map([_offered("create_ticket", "Creates a bug.", TICKET["inputSchema"])])
    ) == ["b"]
    # neither: a changed definition of ambiguous origin is judged against both
    both = index.map([_offered("create_ticket", "Neither.", TICKET["inputSchema"])])
    assert sorted(both) == ["a", "b"]


def test_compare_subset_changed_unlisted_and_earlier_catalog() -> None:
    old = _forms(TICKET, FAIL)
    new = _forms(TICKET, FAIL, ADDED)
    offered = {"create_ticket": tool_form(TICKET)}
    subset = compare_offered(offered, [old, new], discovery_digest="d")
    assert (subset.installed, subset.discovered, subset.earlier_catalog) == (1, 3, False)
    assert install_reason(subset, "d") is None
    # exactly the old catalog after the server only added a tool: stale, its own reason
    earlier = compare_offered(dict(old), [old, new], discovery_digest="d")
    assert earlier.earlier_catalog
    assert (earlier.changed, earlier.unlisted) == ((), ())
    assert install_reason(earlier, "d") == Reason.EARLIER_CATALOG_OFFERED
    # the latest catalog itself is never "earlier", even when an older one equals it
    same = compare_offered(dict(new), [new, new], discovery_digest="d")
    assert install_reason(same, "d") is None
    # a kept old definition of a changed tool
    edited = {**TICKET, "description": "Creates a ticket with a priority."}
    kept = compare_offered({"create_ticket": tool_form(TICKET)}, [old, _forms(edited, FAIL)],
                           discovery_digest="d")  # fmt: skip
    assert (kept.changed, kept.changed_members) == (("create_ticket",), ("description",))
    assert install_reason(kept, "d") == Reason.DIGEST_MISMATCH
    gone = compare_offered({"added_tool": tool_form(ADDED)}, [new, old], discovery_digest="d")
    assert gone.unlisted == ("added_tool",)
    assert install_reason(gone, "d") == Reason.INSTALLED_TOOL_UNLISTED


@pytest.mark.parametrize(
    "hostile",
    [
        "not a schema",
        [1, 2],
        {"type": "object", "properties": {"x": {"type": float("nan")}}},
        {1: "non-string key"},
        {"properties": {2: {}}},
        {"x": object()},
        {"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/A"}}},
    ],
)
def test_hostile_schemas_reduce_without_raising(hostile: Any) -> None:
    form = offered_form(_offered("create_ticket", "Creates a ticket.", hostile))
    assert form_differences(form, tool_form(TICKET)) == ("inputSchema",)


def test_deep_and_large_schemas_are_bounded() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(MAX_SCHEMA_DEPTH * 4):
        node["items"] = {}
        node = node["items"]
    assert reduced_schema(deep) == {"$unreadable": True}
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(50_000)}}
    assert reduced_schema(wide) == {"$unreadable": True}
    huge = offered_form(_offered("t", "x" * 5_000_000, {}))
    assert (len(huge.description_head), huge.description_length) == (4096, 5_000_000)
