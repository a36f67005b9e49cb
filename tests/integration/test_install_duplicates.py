"""A server that lists one tool name twice, and an agent that installs one of the two.

The install is compared tool by tool with the discovery (docs/model.md#installed-subsets): every
installed definition must equal the discovered one of its name. A name listed twice with two
definitions has no single discovered one, so installing either definition alone is not a match
(``stale`` / ``digest_mismatch``), whichever of the two the server listed first and whichever
sorts last; installing both, as listed, matches. Before, the per-tool digest of a repeated name
was the definition that sorted last, so one of the two installs read ``converged`` and the other
``stale``: the verdict depended on the bytes of the definitions. Real ``mcp.Client``, an
in-process server, the real span processor.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.server import Server, ServerRequestContext
from tests.support.processor_helpers import Pipeline, instrumented_pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health import record_installed_tools

pytestmark = pytest.mark.anyio

_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def _server(first: str, second: str) -> Server[Any]:
    """A server listing ``search`` twice (descriptions ``first`` then ``second``) and ``other``."""
    tools = [
        types.Tool(name="search", description=first, input_schema=_OBJECT),
        types.Tool(name="search", description=second, input_schema=_OBJECT),
        types.Tool(name="other", description="Other.", input_schema=_OBJECT),
    ]

    async def on_list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    return Server("duplicates", version="1", on_list_tools=on_list_tools)


@pytest.fixture
def verdicts() -> Any:
    with instrumented_pipeline() as pipeline:
        yield pipeline


def _install(pipeline: Pipeline) -> tuple[Any, ...]:
    attrs = pipeline.last(A.INSTALL_SPAN_NAME).attributes or {}
    return (
        attrs.get(A.CATALOG_VERDICT),
        attrs.get(A.CATALOG_REASON),
        tuple(attrs.get(A.CATALOG_INSTALL_CHANGED, ())),
    )


@pytest.mark.parametrize("order", ["a-first", "b-first"])
@pytest.mark.parametrize("kept", ["a", "b"])
async def test_installing_one_of_two_definitions_of_a_name_is_not_converged(
    verdicts: Pipeline, order: str, kept: str
) -> None:
    first, second = ("a", "b") if order == "a-first" else ("b", "a")
    async with Client(_server(first, second)) as client:
        listed = (await client.list_tools()).tools
        offered = [t for t in listed if t.name == "other" or t.description == kept]
        record_installed_tools(client, offered)
    assert _install(verdicts) == ("stale", "digest_mismatch", ("search",))


async def test_installing_every_listed_definition_converges(verdicts: Pipeline) -> None:
    async with Client(_server("a", "b")) as client:
        record_installed_tools(client, (await client.list_tools()).tools)
    assert _install(verdicts) == ("converged", "ok", ())
