"""Evidence as a pure fold: facts in, records out, through the codec and back (core.fold)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from tests.support.fold_strategies import FACTS, NETWORKS, SEEDS
from tests.support.request_reading import decode_request

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core import facts as F
from otel_mcp_health.core.evidence import (
    NOT_APPLICABLE,
    CallEvidence,
    ExecutionEvidence,
    ProtocolEvidence,
    RequestEvidence,
)
from otel_mcp_health.core.fold import PRECEDENCE, TIMEOUT, TOOL_ERROR, Overwrite, fold, records
from otel_mcp_health.core.observations import Observed


@given(SEEDS, st.lists(FACTS, max_size=8), NETWORKS)
def test_facts_fold_into_records_that_the_codec_reads_back(
    seed: Observed, facts: list[F.Fact], network: str | None
) -> None:
    built = records(seed, facts, network=network)
    attrs = _codec.encode_request(built.request)
    assert decode_request(attrs) == _as_read(built.request)
    if built.handshake is not None:
        assert built.seen.handshake is not None
        encoded = _codec.encode_handshake_result(built.seen.handshake, built.handshake)
        assert _codec.decode_handshake({**encoded, **attrs}, None) == built.handshake
        identity = (built.seen.handshake.target_key, built.seen.handshake.server_name)
        if identity != (None, None) or built.seen.handshake.server_version is not None:
            assert _codec.decode_catalog_key(encoded) is not None
    if built.page is not None:
        page = _codec.encode_page_result(built.page)
        assert _codec.decode_page(page) == dataclasses.replace(built.page.page)
        assert _codec.decode_page_index(page) == built.page.index
        assert _codec.decode_digest(page, of="page") == (built.page.digest, built.page.digest_error)


def _as_read(request: RequestEvidence) -> RequestEvidence:
    """The codec's one convention: a result envelope (isError) means the protocol layer answered."""
    call = request.call
    protocol = call.protocol
    if protocol is None and call.execution is not None and call.execution.is_error is not None:
        protocol = ProtocolEvidence()
    return dataclasses.replace(request, call=dataclasses.replace(call, protocol=protocol))


@given(SEEDS, st.lists(FACTS, max_size=8), NETWORKS)
def test_the_first_classification_of_an_exception_wins(
    seed: Observed, facts: list[F.Fact], network: str | None
) -> None:
    before = fold(seed, facts, network=network)
    if before.error_type is None:
        return
    later = F.Raised(F.Failure.OTHER, "Late")
    assert _fields(fold(seed, [*facts, later], network=network)) == _fields(before)


def test_an_inference_never_overrides_an_observation() -> None:
    refused = F.HttpFailure("ConnectError", outcome="connection_refused", written=False)
    seen = fold(Observed(method="tools/call"), [refused, F.Result()], network="tcp")
    assert (seen.written, seen.transport_outcome) == (False, "connection_refused")
    seen = fold(Observed(method="ping"), [F.Raised(F.Failure.CLOSED, "E")], network="pipe")
    assert (seen.written, seen.transport_outcome, seen.error_type) == (
        False,
        "process_exit",
        "process_exit",
    )


def test_the_write_is_seen_only_after_the_sdk_block_began() -> None:
    assert fold(Observed(method="m"), [F.WriteStarted()], network=None).write_started is None
    steps: list[F.Fact] = [F.SdkEntered(), F.WriteStarted()]
    assert fold(Observed(method="m"), steps, network=None).write_started is True


def test_the_table_names_only_observed_fields_and_known_rules() -> None:
    fields = {
        field.name for field in dataclasses.fields(fold(Observed(method="m"), [], network=None))
    }
    for row, cells in PRECEDENCE.items():
        assert set(cells) <= fields, row
        assert all(isinstance(rule, Overwrite) for rule in cells.values()), row
    assert (TOOL_ERROR, TIMEOUT) == (A.ERROR_TYPE_TOOL_ERROR, A.ERROR_TYPE_TIMEOUT)


_SRC = Path(__file__).resolve().parents[2] / "src" / "otel_mcp_health"


def test_every_encoder_and_decoder_is_used_by_production() -> None:
    """Each encoder and decoder of the codec is used outside it (instrumentation, processor,
    shells) or by another codec function: none exists for the tests alone."""
    names = {name for name in _codec.__all__ if name.startswith(("encode_", "decode_"))}
    used: set[str] = set()
    for path in _SRC.rglob("*.py"):
        if path.parent.name == "_codec" and path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inside = path.parent.name == "_codec"
        for node in ast.walk(tree):
            name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
            if isinstance(node, ast.alias):
                name = node.name
            if name in names and not (inside and isinstance(node, ast.alias)):
                used.add(name)
    assert names - used == set()


def _fields(seen: object) -> dict[str, object]:
    return {f.name: getattr(seen, f.name) for f in dataclasses.fields(seen)}  # type: ignore[arg-type]


def test_a_call_record_of_a_silent_call() -> None:
    facts: list[F.Fact] = [
        F.SdkEntered(),
        F.WriteStarted(),
        F.Raised(F.Failure.CANCELLED, "CancelledError"),
    ]
    built = records(Observed(method="tools/call", tool_name="t"), facts, network=None)
    assert built.request == RequestEvidence(
        call=CallEvidence(
            tool="t",
            authorization=NOT_APPLICABLE,
            execution=ExecutionEvidence(timed_out=True),
        ),
        cancelled=True,
        error_type="CancelledError",
    )
