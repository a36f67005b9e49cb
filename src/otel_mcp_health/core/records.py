"""Parse the offline evidence format (docs/evidence-format.md, JSON Lines) into evidence records.

Every line is parsed on its own: a bad line becomes an :class:`EvidenceError` that names the line
number, the field path and the expected shape, and the other lines still parse. A bad line never
crashes the reader and never yields a verdict. The error message quotes no input *values* (they
may be secrets); it says which field is wrong and what shape was expected.

Times are RFC 3339 strings; they become ``int`` nanoseconds since the epoch. A missing or
``null`` section means "not observed", never "passed" — except a call's ``authorization: null``,
which means "not applicable" (stdio), while an absent ``authorization`` key means not observed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from otel_mcp_health.core.evidence import (
    NOT_APPLICABLE,
    AuthorizationEvidence,
    CallEvidence,
    CatalogEvidence,
    Discovery,
    EffectEvidence,
    ExecutionEvidence,
    HandshakeEvidence,
    NotApplicable,
    OutcomeEvidence,
    Page,
    ProgressEvent,
    ProgressEvidence,
    ProtocolEvidence,
    Record,
    RefreshPolicy,
    SessionEvidence,
    ToolCallCheck,
    TransportEvidence,
)
from otel_mcp_health.core.fields import (
    InvalidField,
    JsonObject,
    choice_names,
    rfc3339_ns,
    str_list,
)
from otel_mcp_health.core.vocabulary import AuthError, CatalogVerdict, TransportOutcome


@dataclass(frozen=True, slots=True)
class EvidenceError:
    """Why one line could not be read: where (line, field) and what shape was expected."""

    line: int
    field: str
    expected: str

    def __str__(self) -> str:
        where = f" field '{self.field}':" if self.field else ""
        return f"line {self.line}:{where} expected {self.expected}"


def _tools(items: list[tuple[object, str]] | None) -> tuple[Mapping[str, Any], ...] | None:
    if items is None:
        return None
    tools = []
    for item, path in items:
        tool = JsonObject(item, path)
        tool.str_("name", required=True)
        tools.append(tool.data)
    return tuple(tools)


def _page(o: JsonObject) -> Page:
    error = o.obj("error")
    tools = _tools(o.list_("tools"))
    return Page(
        cursor=o.str_("cursor"),
        next_cursor=o.str_("nextCursor"),
        tools=tools,
        failed=error is not None,
        error_code=error.int_("code") if error is not None else None,
    )


def _discovery(o: JsonObject) -> Discovery:
    pages = tuple(_page(JsonObject(item, path)) for item, path in o.list_("pages") or [])
    return Discovery(
        started_at=o.time("startedAt"),
        completed_at=o.time("completedAt"),
        pages=pages,
        digest=o.str_("digest"),
    )


def parse_catalog(o: JsonObject) -> CatalogEvidence:
    """Read a catalog section (``kind: "catalog"``, or a session's ``catalog`` object)."""
    policy = o.obj("refreshPolicy")
    max_age = policy.num("maxAgeSeconds") if policy is not None else None
    if policy is not None and max_age is None:
        raise InvalidField(policy.path + ".maxAgeSeconds", "a number of seconds")
    notifications = tuple(rfc3339_ns(item, path) for item, path in o.list_("notifications") or [])
    calls = []
    for item, path in o.list_("toolCalls") or []:
        call = JsonObject(item, path)
        calls.append(
            ToolCallCheck(
                name=call.str_("name", required=True) or "",
                argument_names=str_list(call.list_("argumentNames")),
                contract=call.str_("contract"),
                missing=str_list(call.list_("missingArguments")) or (),
            )
        )
    return CatalogEvidence(
        list_changed=o.bool_("listChanged"),
        refresh_policy=RefreshPolicy(max_age_seconds=max_age) if max_age is not None else None,
        now=o.time("now"),
        notifications=notifications,
        discoveries=tuple(_discovery(JsonObject(i, p)) for i, p in o.list_("discoveries") or []),
        client_tools=_tools(o.list_("clientTools")),
        client_digest=o.str_("clientDigest"),
        tool_calls=tuple(calls),
    )


def _transport(o: JsonObject | None) -> TransportEvidence | None:
    if o is None:
        return None
    outcome = o.enum("outcome", TransportOutcome, choice_names(TransportOutcome))
    if outcome is None:
        raise InvalidField(
            o.path + ".outcome", f"one of {choice_names(TransportOutcome)} (required)"
        )
    return TransportEvidence(
        outcome=outcome, http_status=o.int_("httpStatus"), request_written=o.bool_("requestWritten")
    )


def _authorization(parent: JsonObject) -> AuthorizationEvidence | NotApplicable | None:
    if not parent.has("authorization"):
        return None
    o = parent.obj("authorization")
    if o is None:
        return NOT_APPLICABLE
    scope = o.str_("scope")
    return AuthorizationEvidence(
        http_status=o.int_("httpStatus"),
        error=o.enum("error", AuthError, choice_names(AuthError)),
        scope=tuple(scope.split()) if scope else (),
    )


def parse_call(o: JsonObject) -> CallEvidence:
    """Read a call section (``kind: "call"``, or a session's ``call`` object)."""
    protocol = o.obj("protocol")
    execution = o.obj("execution")
    effect = o.obj("effect")
    outcome = o.obj("outcome")
    effect_observed = effect.bool_("observed") if effect is not None else None
    if effect is not None and effect_observed is None:
        raise InvalidField(effect.path + ".observed", "true or false (required)")
    return CallEvidence(
        tool=o.str_("tool"),
        read_only=o.bool_("readOnly"),
        transport=_transport(o.obj("transport")),
        authorization=_authorization(o),
        protocol=ProtocolEvidence(
            error_code=protocol.int_("errorCode"), result_valid=protocol.bool_("resultValid")
        )
        if protocol is not None
        else None,
        execution=ExecutionEvidence(
            is_error=execution.bool_("isError"),
            timed_out=execution.bool_("timedOut") is True,
            output_schema_valid=execution.bool_("outputSchemaValid"),
        )
        if execution is not None
        else None,
        effect=EffectEvidence(
            observed=effect_observed is True, method=effect.str_("method") or "unspecified"
        )
        if effect is not None
        else None,
        outcome=OutcomeEvidence(
            method=outcome.str_("method", required=True) or "",
            passed=outcome.bool_("passed"),
            confidence=outcome.num("confidence"),
        )
        if outcome is not None
        else None,
    )


def _handshake(o: JsonObject | None) -> HandshakeEvidence | None:
    if o is None:
        return None
    caps = o.obj("capabilities")
    return HandshakeEvidence(
        requested_version=o.str_("requestedVersion"),
        negotiated_version=o.str_("negotiatedVersion"),
        error_code=o.int_("errorCode"),
        capabilities=caps.data if caps is not None else None,
        supported_versions=str_list(o.list_("supportedVersions")),
        transport=_transport(o.obj("transport")),
        authorization=_authorization(o),
    )


def _progress(o: JsonObject | None) -> ProgressEvidence | None:
    if o is None:
        return None
    events = []
    for item, path in o.list_("events") or []:
        event = JsonObject(item, path)
        at = event.time("at")
        value = event.raw("progress")
        if at is None:
            raise InvalidField(path + ".at", "an RFC 3339 time (required)")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidField(path + ".progress", "a number (required)")
        token = event.raw("token")
        events.append(
            ProgressEvent(
                at=at,
                token=None if token is None else str(token),
                progress=float(value),
                total=event.num("total"),
            )
        )
    token = o.raw("requestToken")
    return ProgressEvidence(
        now=o.time("now"),
        started_at=o.time("startedAt"),
        completed_at=o.time("completedAt"),
        in_flight=o.bool_("inFlight") is True,
        idle_window_seconds=o.num("idleWindowSeconds"),
        deadline_seconds=o.num("deadlineSeconds"),
        request_token=None if token is None else str(token),
        events=tuple(events),
    )


def parse_session(o: JsonObject) -> SessionEvidence:
    """Read a ``kind: "session"`` record."""
    catalog = o.obj("catalog")
    given: CatalogVerdict | None = None
    evidence = None
    if catalog is not None:
        if catalog.has("verdict"):
            given = catalog.enum("verdict", CatalogVerdict, choice_names(CatalogVerdict))
        else:
            evidence = parse_catalog(catalog)
    call = o.obj("call")
    return SessionEvidence(
        handshake=_handshake(o.obj("session")),
        catalog=evidence,
        catalog_verdict=given,
        call=parse_call(call) if call is not None else None,
        progress=_progress(o.obj("progress")),
    )


_PARSERS: dict[str, Callable[[JsonObject], Any]] = {
    "catalog": parse_catalog,
    "call": parse_call,
    "session": parse_session,
}


def parse_record(data: object, line: int = 1) -> Record | EvidenceError:
    """Parse one decoded JSON value into a :class:`Record`, or say precisely why not."""
    try:
        o = JsonObject(data, "")
        kind = o.str_("kind", required=True)
        if kind not in _PARSERS:
            raise InvalidField("kind", 'one of "catalog", "call", "session"')
        record_id = o.str_("id", required=True) or ""
        expect = o.obj("expect")
        expected = {k: v for k, v in expect.data.items() if isinstance(v, str)} if expect else {}
        return Record(id=record_id, evidence=_PARSERS[kind](o), expect=expected)
    except InvalidField as exc:
        return EvidenceError(line, exc.field, exc.expected)
    except RecursionError:
        return EvidenceError(line, "", "a JSON object nested less deeply")


_BOM = "\ufeff"


def parse_line(text: str, line: int) -> Record | EvidenceError | None:
    """Parse one line of a ``.jsonl`` file; ``None`` for a blank line."""
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return EvidenceError(line, "", "one JSON object per line (this line is not valid JSON)")
    return parse_record(data, line)


def parse_lines(lines: Iterator[str] | list[str]) -> Iterator[Record | EvidenceError]:
    """Parse JSON Lines, yielding a record or an error for every non-blank line, in order.

    A UTF-8 byte order mark at the start of the first line (as some editors write) is skipped.
    """
    for number, text in enumerate(lines, start=1):
        parsed = parse_line(text.removeprefix(_BOM) if number == 1 else text, number)
        if parsed is not None:
            yield parsed
