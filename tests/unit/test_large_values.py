"""Large values: any catalog RFC 8785 represents digests, whatever the size of one tool.

CPython's C pickler (the type proof behind the digest cache, :mod:`otel_mcp_health.core.jcs`)
writes a str or bytes payload of 64 KiB or more apart from its buffer, so one ``dump`` makes
several writes. A proof taken from the first write alone was a prefix: a batch of proofs no
longer lined up with its tools (the digest failed with ``digest_unrepresentable``), and a prefix
could hide a non-finite float or a difference behind the large payload. Every test here compares
with the ``rfc8785`` reference or with a fresh digester, on sizes on both sides of that limit.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import pytest
import rfc8785

from otel_mcp_health.core import jcs
from otel_mcp_health.core.digest import (
    CatalogDigester,
    DigestError,
    project_tool,
)
from otel_mcp_health.core.reasons import DigestReason

KIB = 1024
MIB = 1024 * KIB
#: One tool of each size: below the pickler's 64 KiB frame target, at it, and far above it.
SIZES = [32 * KIB, 64 * KIB - 1, 64 * KIB, MIB, 16 * MIB]


def _reference(tools: list[dict[str, Any]]) -> str:
    """The digest recipe (docs/model.md) written with the reference encoder only."""
    projected = sorted(
        (project_tool(t) for t in tools), key=lambda t: (t["name"], rfc8785.dumps(t))
    )
    return "sha256:" + hashlib.sha256(rfc8785.dumps(projected)).hexdigest()


def _large_tool(size: int, member: str, name: str = "big") -> dict[str, Any]:
    filler = "é" * (size // 2)  # 2 UTF-8 bytes each: the payload is `size` bytes
    tool: dict[str, Any] = {"name": name, "inputSchema": {"type": "object", "properties": {}}}
    if member == "name":
        tool["name"] = name + filler
    elif member == "description":
        tool["description"] = filler
    else:
        tool["inputSchema"]["properties"]["q"] = {"type": "string", "description": filler}
    return tool


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s // KIB}KiB")
@pytest.mark.parametrize("member", ["name", "description", "inputSchema"])
def test_one_large_tool_digests_like_the_reference(size: int, member: str) -> None:
    tools = [{"name": "a"}, _large_tool(size, member), {"name": "z", "title": "last"}]
    digester = CatalogDigester()
    expected = _reference(tools)
    assert digester.digest(tools) == expected
    assert digester.digest(tools) == expected  # warm: from the whole-catalog memo
    assert CatalogDigester(max_tools=0).digest(tools) == expected  # no cache at all


def test_a_catalog_of_many_large_tools() -> None:
    tools = [_large_tool(200 * KIB, "description", name=f"t{i:02d}") for i in range(40)]
    tools[7]["description"] += "!"  # content differs behind the payload
    digester = CatalogDigester()
    assert digester.digest(tools) == _reference(tools)
    tools[7]["description"] = tools[7]["description"][:-1] + "?"
    assert digester.digest(tools) == _reference(tools)  # an in-place change past 64 KiB is seen


def test_a_proof_is_the_whole_pickle_not_its_first_write() -> None:
    prefix = "x" * (128 * KIB)
    one, two = [prefix, 1], [prefix, 2]
    assert jcs.type_proof(one) != jcs.type_proof(two)
    assert jcs.type_proofs([one, two]) == [jcs.type_proof(one), jcs.type_proof(two)]
    proof = jcs.type_proof(one)
    assert proof is not None
    assert len(proof) > 128 * KIB


@pytest.mark.parametrize("encoder", ["orjson", "stdlib"])
def test_a_non_finite_float_behind_a_large_payload_is_refused(encoder: str) -> None:
    value = {"description": "x" * (100 * KIB), "z": math.nan}
    with pytest.raises(jcs.JcsError):
        jcs.canonicalize(value, encoder=encoder)
    with pytest.raises(DigestError) as caught:
        CatalogDigester().digest([{"name": "t", "inputSchema": value}])
    assert caught.value.reason == DigestReason.UNREPRESENTABLE


def test_same_prefix_different_tail_is_two_cache_entries() -> None:
    digester = CatalogDigester()
    first = [_large_tool(MIB, "description")]
    second = [dict(first[0], description=first[0]["description"] + "tail")]
    assert digester.digest(first) == _reference(first)
    assert digester.digest(second) == _reference(second)
    assert digester.digest(second) != digester.digest(first)
