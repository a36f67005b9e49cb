"""Amazon Bedrock's Converse API through boto3 (``bedrock-runtime``): converse and converse_stream,
against the scripted endpoint's Bedrock routes. Runs in the ``model_clients`` cell of noxfile.py.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config

from tests.model_requests.harness import DEFINITIONS, OFFERED, Drive, Recorded, compare
from tests.support.scripted_model import ScriptedModel

TOOL_CONFIG: dict[str, Any] = {
    "tools": [
        {"toolSpec": {"name": n, "inputSchema": {"json": s}} | ({"description": d} if d else {})}
        for n, d, s in DEFINITIONS
    ]
    + [{"cachePoint": {"type": "default"}}]
}
MESSAGES = [{"role": "user", "content": [{"text": "Open a ticket for the printer."}]}]


@pytest.fixture(autouse=True)
def _credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Static credentials: botocore signs the request; the scripted endpoint does not check it."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def _client(model: ScriptedModel) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=model.url + "/a",
        config=Config(retries={"max_attempts": 1}),
    )


def _plain(response: dict[str, Any]) -> dict[str, Any]:
    """The response without its metadata (request id, date)."""
    return {k: v for k, v in response.items() if k != "ResponseMetadata"}


def converse(model: ScriptedModel) -> Any:
    client = _client(model)
    return _plain(client.converse(modelId="m", messages=MESSAGES, toolConfig=TOOL_CONFIG))


def converse_stream(model: ScriptedModel) -> Any:
    client = _client(model)
    response = client.converse_stream(modelId="m", messages=MESSAGES, toolConfig=TOOL_CONFIG)
    return list(response["stream"])


def converse_stream_abandoned(model: ScriptedModel) -> Any:
    client = _client(model)
    response = client.converse_stream(modelId="m", messages=MESSAGES, toolConfig=TOOL_CONFIG)
    events = response["stream"]
    first = next(iter(events))
    events.close()
    return first


CASES: list[Drive] = [converse, converse_stream, converse_stream_abandoned]


@pytest.mark.parametrize("drive", CASES, ids=[c.__name__ for c in CASES])
def test_each_request_records_exactly_what_it_offered(drive: Drive, recorded: Recorded) -> None:
    compare(drive, recorded)
    assert recorded == [("bedrock.converse", OFFERED)]


def test_other_operations_and_services_are_not_read(recorded: Recorded) -> None:
    def drive(model: ScriptedModel) -> Any:
        return _plain(_client(model).converse(modelId="m", messages=MESSAGES))

    compare(drive, recorded)
    assert recorded == []


@pytest.mark.parametrize(
    "tool_config",
    [
        "tools",
        {"tools": "x"},
        {"tools": [1, None, {"toolSpec": "x"}, {"toolSpec": {"name": 3}}]},
        {"tools": [{"toolSpec": {"name": "s", "inputSchema": {"json": {"x": {1}}}}}]},
    ],
    ids=["not a mapping", "tools not a list", "entries not tools", "a set in a schema"],
)
def test_hostile_tool_configs_never_raise(tool_config: Any, recorded: Recorded) -> None:
    """botocore refuses these (its own exception, unchanged); nothing is read of a refused call."""

    def drive(model: ScriptedModel) -> Any:
        return _plain(
            _client(model).converse(modelId="m", messages=MESSAGES, toolConfig=tool_config)
        )

    compare(drive, recorded, routed=False)
    assert recorded == []
