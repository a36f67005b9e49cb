"""Catalog digest, projection v1 (docs/model.md): golden vectors, projection, errors, caching."""

from __future__ import annotations

import copy
import enum
import hashlib
import json
import math
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import rfc8785

from otel_mcp_health.core.digest import (
    DIGEST_PROJECTION,
    PROJECTED_MEMBERS,
    CatalogDigester,
    DigestError,
    canonicalize,
    catalog_bytes,
    digest_tools,
    project_tool,
)
from otel_mcp_health.core.reasons import DigestReason

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "digest"
VECTOR_FILES = sorted(VECTORS.glob("*.json"))


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((VECTORS / f"{name}.json").read_text(encoding="utf-8"))
    return data


def _reference(tools: list[dict[str, Any]]) -> str:
    """The recipe spelled out with the rfc8785 package (independent of our canonicalizer)."""
    projected = [{k: t[k] for k in PROJECTED_MEMBERS if k in t} for t in tools]
    projected.sort(key=lambda t: (t["name"], rfc8785.dumps(t)))
    return "sha256:" + hashlib.sha256(rfc8785.dumps(projected)).hexdigest()


def test_vectors_present() -> None:
    assert len(VECTOR_FILES) >= 10


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.stem)
def test_golden_vector(path: Path) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    if "error" in case:
        with pytest.raises(DigestError) as info:
            CatalogDigester().digest(case["tools"])
        assert info.value.reason == case["error"]
        return
    assert CatalogDigester().digest(case["tools"]) == case["digest"]
    assert digest_tools(case["tools"]) == case["digest"]
    assert catalog_bytes(case["tools"]).decode("utf-8") == case["canonical"]
    assert _reference(case["tools"]) == case["digest"]


def test_same_name_new_required_argument_changes_digest() -> None:
    """A names-only inventory would not see this change; the digest does."""
    v1, v2 = _load("read_ticket_v1"), _load("read_ticket_v2_new_required_argument")
    assert sorted(t["name"] for t in v1["tools"]) == sorted(t["name"] for t in v2["tools"])
    assert v1["digest"] != v2["digest"]
    assert digest_tools(v1["tools"]) != digest_tools(v2["tools"])


def test_order_meta_and_icons_do_not_matter() -> None:
    base = _load("read_ticket_v1")["digest"]
    assert _load("read_ticket_v1_shuffled")["digest"] == base
    assert _load("read_ticket_v1_meta_icons")["digest"] == base
    tools = _load("read_ticket_v1")["tools"]
    assert digest_tools(list(reversed(tools))) == base


def test_absent_member_differs_from_null_member() -> None:
    assert _load("absent_title")["digest"] != _load("null_title")["digest"]
    assert project_tool({"name": "a"}) == {"name": "a"}
    assert project_tool({"name": "a", "title": None}) == {"name": "a", "title": None}


def test_projection_keeps_only_v1_members_in_fixed_order() -> None:
    tool = {m: m for m in reversed(PROJECTED_MEMBERS)} | {"_meta": {}, "icons": [], "other": 1}
    assert tuple(project_tool(tool)) == PROJECTED_MEMBERS
    assert DIGEST_PROJECTION == "v1"


def test_duplicate_names_are_order_independent() -> None:
    tools = _load("duplicate_names")["tools"]
    assert digest_tools(tools) == digest_tools(list(reversed(tools)))


def test_key_order_inside_a_tool_does_not_matter() -> None:
    tool = {"name": "t", "inputSchema": {"b": 1, "a": {"y": 2, "x": 3}}}
    other = {"inputSchema": {"a": {"x": 3, "y": 2}, "b": 1}, "name": "t"}
    assert digest_tools([tool]) == digest_tools([other])


def test_digest_format() -> None:
    value = digest_tools([{"name": "x"}])
    assert value.startswith("sha256:")
    assert len(value) == 7 + 64
    assert value[7:] == value[7:].lower()
    assert value == "sha256:" + hashlib.sha256(b'[{"name":"x"}]').hexdigest()


def test_accepts_any_mapping_and_iterable() -> None:
    tools = _load("read_ticket_v1")["tools"]
    proxies = (MappingProxyType(t) for t in tools)
    assert CatalogDigester().digest(proxies) == _load("read_ticket_v1")["digest"]
    assert digest_tools(tuple(tools)) == _load("read_ticket_v1")["digest"]


@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        math.inf,
        -math.inf,
        2**53,
        -(2**53),
        10**400,
        "\ud800",
        "lone \udfff surrogate",
        "\udfff0\udfff",
        {1: "int key"},
        {None: 1},
        {"a": {1, 2}},
        b"bytes",
        bytearray(b"x"),
        object(),
        [complex(1, 2)],
        {"k": Path("p")},
        {"\ud800": 1},
    ],
    ids=repr,
)
def test_unrepresentable_values_raise_digest_error(value: Any) -> None:
    with pytest.raises(DigestError) as info:
        digest_tools([{"name": "t", "inputSchema": {"default": value}}])
    assert info.value.reason == DigestReason.UNREPRESENTABLE
    assert type(info.value) is DigestError
    with pytest.raises(DigestError):
        canonicalize(value)


def test_detail_does_not_echo_the_value() -> None:
    secret = "sk-live-0123456789"
    for bad in ({secret: {1, 2}}, [secret, float("nan")], {"x": secret + "\ud800"}, {7: secret}):
        with pytest.raises(DigestError) as info:
            canonicalize(bad)
        assert secret not in str(info.value)
        assert "0123456789" not in info.value.detail
        assert info.value.detail.isidentifier()


def test_nan_vector_reason() -> None:
    case = _load("nan_unrepresentable")
    with pytest.raises(DigestError) as info:
        digest_tools(case["tools"])
    assert info.value.reason == "digest_unrepresentable"


def test_deep_and_cyclic_values_raise_digest_error() -> None:
    deep: Any = "leaf"
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(DigestError) as info:
        digest_tools([{"name": "deep", "inputSchema": deep}])
    assert info.value.reason == DigestReason.UNREPRESENTABLE
    cyclic: dict[str, Any] = {"name": "loop"}
    cyclic["inputSchema"] = cyclic
    with pytest.raises(DigestError) as info:
        digest_tools([cyclic])
    assert info.value.reason == DigestReason.UNREPRESENTABLE
    moderately_deep: Any = {}
    for _ in range(200):
        moderately_deep = {"a": moderately_deep}
    assert canonicalize(moderately_deep) == rfc8785.dumps(moderately_deep)


@pytest.mark.parametrize("tool", [[], "read_ticket", None, 3, ("name", "x")], ids=repr)
def test_tool_not_an_object(tool: Any) -> None:
    with pytest.raises(DigestError) as info:
        digest_tools([{"name": "ok"}, tool])
    assert info.value.reason == DigestReason.TOOL_NOT_AN_OBJECT


@pytest.mark.parametrize("tool", [{}, {"title": "x"}, {"name": None}, {"name": 3}], ids=repr)
def test_tool_without_name(tool: Any) -> None:
    with pytest.raises(DigestError) as info:
        digest_tools([tool])
    assert info.value.reason == DigestReason.TOOL_WITHOUT_NAME


def test_tools_not_iterable() -> None:
    with pytest.raises(DigestError) as info:
        digest_tools(42)  # type: ignore[arg-type]
    assert info.value.reason == DigestReason.TOOLS_NOT_A_LIST

    def failing() -> Iterator[dict[str, Any]]:
        yield {"name": "a"}
        raise RuntimeError("connection reset")

    with pytest.raises(DigestError) as info:
        digest_tools(failing())
    assert info.value.reason == DigestReason.TOOLS_NOT_A_LIST


def test_misbehaving_mapping_is_a_digest_error() -> None:
    class Broken(Mapping[str, Any]):
        """A mapping whose every read raises: a tool the digest cannot read."""

        def __getitem__(self, key: str) -> Any:
            raise RuntimeError("boom")

        def __iter__(self) -> Iterator[str]:
            return iter(["name"])

        def __len__(self) -> int:
            return 1

    with pytest.raises(DigestError):
        digest_tools([Broken()])


def test_misbehaving_values_are_digest_errors() -> None:
    class BadInt(int):
        """An ``int`` whose ``__int__`` raises."""

        def __int__(self) -> int:
            raise RuntimeError("boom")

    class BadList(list[Any]):
        """A ``list`` whose iteration raises."""

        def __iter__(self) -> Iterator[Any]:
            raise RuntimeError("boom")

    for value in (BadInt(3), BadList([1])):
        with pytest.raises(DigestError) as info:
            digest_tools([{"name": "t", "inputSchema": value}])
        assert info.value.reason == DigestReason.UNREPRESENTABLE


# --- cache -------------------------------------------------------------------------------


def _catalog() -> list[dict[str, Any]]:
    return copy.deepcopy(_load("read_ticket_v1")["tools"])


def test_mutating_a_tool_changes_the_next_digest() -> None:
    digester = CatalogDigester()
    tools = _catalog()
    first = digester.digest(tools)
    assert digester.digest(tools) == first
    tools[0]["inputSchema"]["required"].append("projectId")  # deep, in-place mutation
    second = digester.digest(tools)
    assert second != first
    assert second == _reference(tools)
    tools[0]["inputSchema"]["required"].pop()
    assert digester.digest(tools) == first


@pytest.mark.parametrize(
    ("old", "new"),
    [(1, True), (1, 1.0), (1, "1"), (0.0, -0.0), ([1], (1,)), ("a", "b"), (None, False)],
    ids=repr,
)
def test_cache_distinguishes_types_and_values(old: Any, new: Any) -> None:
    digester = CatalogDigester()
    tool: dict[str, Any] = {"name": "t", "inputSchema": {"default": old}}
    assert digester.digest([tool]) == _reference([tool])
    tool["inputSchema"]["default"] = new
    assert digester.digest([tool]) == _reference([tool])


def test_cache_never_accepts_what_it_should_reject() -> None:
    digester = CatalogDigester()
    tool: dict[str, Any] = {"name": "t", "inputSchema": {"max": 5}}
    digester.digest([tool])
    tool["inputSchema"]["max"] = 2**60
    with pytest.raises(DigestError):
        digester.digest([tool])
    tool["inputSchema"] = {5: "x"}
    with pytest.raises(DigestError):
        digester.digest([tool])


def test_meta_changes_keep_the_digest() -> None:
    digester = CatalogDigester()
    tools = _catalog()
    first = digester.digest(tools)
    tools[1]["_meta"] = {"rev": 2}
    assert digester.digest(tools) == first


def test_cache_is_bounded_and_counts() -> None:
    digester = CatalogDigester(max_tools=3)
    tools = [{"name": f"t{i}"} for i in range(10)]
    reference = _reference(tools)
    assert digester.digest(tools) == reference
    assert len(digester) == 3
    assert digester.misses == 10
    assert digester.digest(tools) == reference
    digester.clear()
    assert len(digester) == 0
    uncached = CatalogDigester(max_tools=0)
    assert uncached.digest(tools) == reference
    assert len(uncached) == 0
    with pytest.raises(ValueError, match="max_tools"):
        CatalogDigester(max_tools=-1)


def test_warm_digest_hits_the_cache() -> None:
    digester = CatalogDigester()
    text = (VECTORS / "read_ticket_v1.json").read_text(encoding="utf-8")
    tools = json.loads(text)["tools"]
    digester.digest(tools)
    misses = digester.misses
    reparsed = json.loads(text)["tools"]  # what the next tools/list response looks like
    assert digester.digest(reparsed) == digester.digest(tools)
    assert digester.misses == misses
    held = [(t["name"], t["description"]) for t in reparsed]  # others may hold references
    assert digester.digest(reparsed) == digester.digest(tools)
    assert digester.misses == misses
    assert held
    reparsed[0]["inputSchema"]["required"] = []
    assert digester.digest(reparsed) == _reference(reparsed) != digester.digest(tools)
    assert digester.digest(copy.deepcopy(tools)) == digester.digest(tools)  # may miss; still right


def test_digester_is_thread_safe() -> None:
    digester = CatalogDigester(max_tools=50)
    catalogs = [[{"name": f"t{i}", "description": str(j)} for i in range(40)] for j in range(4)]
    expected = [_reference(c) for c in catalogs]
    errors: list[str] = []

    def work(seed: int) -> None:
        for n in range(40):
            k = (seed + n) % 4
            if digester.digest(catalogs[k]) != expected[k]:
                errors.append(f"{seed}:{n}")

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(digester) <= 50


def _hit_twice(digester: CatalogDigester, tools: list[dict[str, Any]]) -> str:
    """Digest ``tools`` until the whole catalog is answered from the cache (no tool looked at)."""
    first = digester.digest(tools)
    hits, misses = digester.hits, digester.misses
    assert digester.digest(tools) == first
    assert (digester.hits, digester.misses) == (hits + len(tools), misses)
    return first


class _Text(str):
    """A ``str`` subclass ``==`` to its plain value, with a method of its own: a change ``==``
    cannot see."""

    def upper(self) -> str:
        return "shouting"


class _Schema(dict[str, Any]):
    """A ``dict`` subclass ``==`` to its plain value whose ``items`` answers another member: a
    change ``==`` cannot see."""

    def items(self) -> Any:
        return [("injected", True)]


class _One(enum.IntEnum):
    """An ``IntEnum`` whose member is ``==`` to 1: a change ``==`` cannot see."""

    ONE = 1


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (1, True),
        (True, 1),
        (1, 1.0),
        (0, False),
        (None, math.nan),
        (2.0**53, 2**53),  # == but only the float is in range
        ("x", _Text("x")),
        ({"a": 1}, _Schema(a=1)),
        (1, _One.ONE),
    ],
    ids=repr,
)
def test_catalog_hit_then_in_place_change_misses(old: Any, new: Any) -> None:
    """After a whole-catalog hit, a change that ``==`` cannot see still gives the new answer."""
    digester = CatalogDigester()
    tools = _catalog()
    tools[0]["inputSchema"]["properties"]["x"] = {"default": old}
    assert _hit_twice(digester, tools) == _reference(tools)
    assert new == old or math.isnan(new)  # the cases a key built on == would get wrong
    tools[0]["inputSchema"]["properties"]["x"] = {"default": new}
    try:
        expected: str | None = _reference(tools)
    except (ValueError, TypeError):
        expected = None
    for _ in range(2):
        if expected is None:
            with pytest.raises(DigestError):
                digester.digest(tools)
        else:
            assert digester.digest(tools) == expected
    tools[0]["inputSchema"]["properties"]["x"] = {"default": old}
    assert digester.digest(tools) == _reference(tools)


def test_catalog_hit_then_changed_catalog_gives_the_new_digest() -> None:
    digester = CatalogDigester()
    tools = _catalog()
    first = _hit_twice(digester, tools)
    tools[-1]["description"] += " (edited)"
    changed = digester.digest(tools)
    assert changed == _reference(tools) != first
    assert _hit_twice(digester, tools) == changed
    tools[-1]["description"] = tools[-1]["description"].removesuffix(" (edited)")
    assert digester.digest(tools) == first  # a recent catalog again
    reordered = list(reversed(tools))
    assert digester.digest(reordered) == first  # another order: per-tool hits, same digest
