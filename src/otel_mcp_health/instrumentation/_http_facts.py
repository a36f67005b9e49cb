"""What an HTTP answer or failure tells about a request, on both HTTP transports (streamable
HTTP, SSE), captured before the SDK collapses statuses into -32603 (private).

A hook module (the seam's contract: :data:`._compat.HOOK_MODULES`). The HTTP response or failure
of a POST becomes a fact of its request (``HttpResponse``, ``HttpFailure``), folded with the
others when the request ends; the same readings judge an SSE connecting GET (:mod:`._sse`).
"""

from __future__ import annotations

from typing import Any

from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.facts import Fact, HttpFailure, HttpResponse
from otel_mcp_health.core.failures import classify_transport_failure, leaf, parse_www_authenticate
from otel_mcp_health.core.vocabulary import AuthError
from otel_mcp_health.instrumentation._state import RequestRecord


def on_http_response(record: RequestRecord, response: Any) -> None:
    """The POST got a response: status, sanitized ``WWW-Authenticate``, session id."""
    fact = response_fact(response)
    if fact.session_id is not None:
        record.state.session_id = fact.session_id
    record.observe(fact)


def response_fact(response: Any) -> HttpResponse:
    """An HTTP response as a fact: status, sanitized ``WWW-Authenticate``, session id."""
    status = int(response.status_code)
    headers = response.headers
    json_body = headers.get("content-type", "").lower().startswith("application/json")
    error: str | None = None
    scopes: tuple[str, ...] = ()
    if status in (401, 403):
        error, scopes = parse_www_authenticate(headers.get("www-authenticate"))
    session_id = headers.get("mcp-session-id")
    session_id = cap(session_id) if isinstance(session_id, str) and session_id else None
    auth_error = AuthError(error) if error is not None else None
    return HttpResponse(status, json_body, auth_error, scopes, session_id)


def on_http_error(record: RequestRecord, exc: BaseException) -> None:
    """The POST itself failed (the caller will only see a cancellation): its failure chain.

    mcp 1.x raises ``httpx.HTTPStatusError`` for an error status; the answer is its response.
    """
    for fact in failure_facts(exc):
        if isinstance(fact, HttpResponse) and fact.session_id is not None:
            record.state.session_id = fact.session_id
        record.observe(fact)


def failure_facts(exc: BaseException) -> list[Fact]:
    """A failed HTTP request as facts: its error response, or its classified failure chain."""
    exception_type = type(leaf(exc)).__qualname__
    response = getattr(leaf(exc), "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and status >= 300:  # an error, or a redirect nobody followed
        return [response_fact(response), HttpFailure(exception_type, status=status)]
    failure = classify_transport_failure(exc)
    outcome, written, oauth = failure.outcome, failure.written, failure.oauth
    return [HttpFailure(exception_type, outcome=outcome, written=written, oauth=oauth)]
