"""``check --call`` of a tool the server did not list a moment before: said in words.

The processor judges such a call ``stale_catalog`` (``catalog_unknown_tool_called``) and its next
action is a bounded re-discovery: right for an agent whose catalog may have aged, wrong advice
for a person who just listed the tools and mistyped a name. The check knows what it listed, so
it says the tool is not there, and ``--json`` carries ``call.listed``.
"""

from __future__ import annotations

from tests.check.check_support import check, stdio


def test_a_tool_the_listing_does_not_hold_is_named_as_such() -> None:
    result = check("--call", "export_reportz", *stdio("healthy"))
    assert result.code == 1
    assert "'export_reportz' is not among the 7 tools the server listed a moment ago" in result.out
    assert "list the tools again" not in result.out
    assert "the server does not list a tool named 'export_reportz'" in result.out


def test_json_says_whether_the_called_tool_was_listed() -> None:
    unknown = check("--json", "--call", "export_reportz", *stdio("healthy")).json()
    assert unknown["call"]["listed"] is False
    assert unknown["verdict"] == "stale_catalog"  # the processor's verdict is unchanged
    known = check("--json", "--call", "fail", *stdio("healthy")).json()
    assert known["call"]["listed"] is True


def test_a_listed_tool_keeps_the_verdicts_own_words() -> None:
    result = check("--call", "fail", *stdio("healthy"))
    assert "not among" not in result.out
    assert "look at the tool's own logs" in result.out
