"""Hooks of the streamable HTTP transport, captured before the SDK collapses statuses into -32603.

A hook module (the seam's contract: :data:`._wrappers.HOOK_MODULES`). The HTTP response or
failure of a POST becomes a fact of its request (``HttpResponse``, ``HttpFailure``), folded with
the others when the request ends.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.facts import HttpFailure, HttpResponse
from otel_mcp_health.core.failures import classify_transport_failure, leaf, parse_www_authenticate
from otel_mcp_health.core.vocabulary import AuthError
from otel_mcp_health.instrumentation import _state, _targets
from otel_mcp_health.instrumentation._state import RequestRecord

_DEFAULT_PORTS = {"http": 80, "https": 443}


def on_http_request(record: RequestRecord, transport: Any) -> None:
    """A POST for this request is about to go out: learn the server identity and session id."""
    state = record.state
    if state.network_transport is None:
        state.network_transport = "tcp"
        url = urlsplit(str(transport.url))
        state.server_address = url.hostname
        state.server_port = url.port or _DEFAULT_PORTS.get(url.scheme)
        target = _targets.http_target(
            url.scheme, url.hostname or "", state.server_port, url.path, url.query
        )
        state.target_key = _targets.target_key(target)
    session_id = getattr(transport, "session_id", None)
    if isinstance(session_id, str):
        state.session_id = cap(session_id)
    start = state.start_attributes()
    if start is not record.start_attributes:  # learned since the span started
        record.post_attributes = start


def post_matches(record: RequestRecord, post_ctx: Any) -> bool:
    """Is this POST the one carrying the request (not a cancel notification sent in its context)?"""
    message = post_ctx.session_message.message
    if getattr(message, "method", None) != record.method or not hasattr(message, "id"):
        return False
    return record.request_id is None or str(message.id) == record.request_id


def wire_request_of(post_ctx: Any) -> RequestRecord | None:
    """mcp 1.x: the open request a POST carries, found by its id in the session whose inbound
    stream the transport answers into (the POST runs outside the request's context)."""
    inbound = getattr(post_ctx.read_stream_writer, "_state", None)
    state = _state.INBOUND_STREAMS.get(inbound) if inbound is not None else None
    message = getattr(post_ctx.session_message.message, "root", None)
    request_id = getattr(message, "id", None)
    if state is None or request_id is None or not hasattr(message, "method"):
        return None
    return state.wire_requests.get(str(request_id))


def on_http_response(record: RequestRecord, response: Any) -> None:
    """The POST got a response: status, sanitized ``WWW-Authenticate``, session id."""
    status = int(response.status_code)
    headers = response.headers
    json_body = headers.get("content-type", "").lower().startswith("application/json")
    error: str | None = None
    scopes: tuple[str, ...] = ()
    if status in (401, 403):
        error, scopes = parse_www_authenticate(headers.get("www-authenticate"))
    session_id = headers.get("mcp-session-id")
    session_id = cap(session_id) if isinstance(session_id, str) and session_id else None
    if session_id is not None:
        record.state.session_id = session_id
    auth_error = AuthError(error) if error is not None else None
    record.observe(HttpResponse(status, json_body, auth_error, scopes, session_id))


def on_http_error(record: RequestRecord, exc: BaseException) -> None:
    """The POST itself failed (the caller will only see a cancellation): its failure chain.

    mcp 1.x raises ``httpx.HTTPStatusError`` for an error status; the answer is its response.
    """
    exception_type = type(leaf(exc)).__qualname__
    response = getattr(leaf(exc), "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and status >= 400:
        on_http_response(record, response)
        record.observe(HttpFailure(exception_type, status=status))
        return
    failure = classify_transport_failure(exc)
    record.observe(
        HttpFailure(
            exception_type, outcome=failure.outcome, written=failure.written, oauth=failure.oauth
        )
    )
