"""OpenTelemetry instrumentation for MCP *clients* (``mcp >= 1.19, < 3``) that records health
evidence.

It emits exactly one semconv CLIENT span per JSON-RPC request the application's ``ClientSession``
sends (named ``{mcp.method.name} {target}``, e.g. ``tools/call create_ticket``). mcp 2 already
creates its own ``MCP send …`` client spans; this instrumentation takes that span's place (the SDK
is handed our span, so there is never a second one and W3C trace context still flows into
``params._meta``). On the in-process direct path and on mcp 1.x, where the SDK emits no span, it
creates one. The hooks are picked by the SDK line in use (``_compat``; a missing private hook
is a warning and ``mcp_health.evidence.missing`` on the affected spans, never an error:
docs/configuration.md#supported-sdks).
Each span carries small, safe evidence under ``mcp_health.`` (docs/model.md#privacy) that the span
processor turns into verdicts; tool arguments, results, tokens, raw cursors, headers and server
messages are never recorded.

Zero-code
---------
With the package installed, ``opentelemetry-instrument`` loads it through the
``opentelemetry_instrumentor`` entry point ``mcp_health``::

    opentelemetry-instrument python agent.py

Disable it with ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=mcp_health``.

Manual
------
Instrument before the first ``ClientSession`` is *entered* (the SDK binds its notification handler
on entry, so sessions opened earlier are not fully observed)::

    from otel_mcp_health import McpHealthInstrumentor

    McpHealthInstrumentor().instrument(tracer_provider=provider, meter_provider=meter_provider)
    async with mcp.Client("https://tools.example.com/mcp") as client:
        await client.list_tools()
        await client.call_tool("create_ticket", {"title": "..."})
    McpHealthInstrumentor().uninstrument()   # exact inverse; instrument() again works

Both providers are optional (the global ones are used). ``instrument()`` twice is a no-op.
``approved_catalog=PATH`` (or ``OTEL_INSTRUMENTATION_MCP_HEALTH_APPROVED_CATALOG``) judges every
complete discovery against a pin file read once, here (docs/model.md#approval).

What is recorded
----------------
* every span: ``mcp.method.name``, ``mcp_health.session.key`` (a random, process-local key per
  ``ClientSession``), ``mcp.protocol.version`` once negotiated, ``mcp.session.id`` (streamable
  HTTP), ``network.transport`` (``pipe`` for stdio, ``tcp`` for HTTP; absent in-process, where
  semconv has no value), ``server.address``/``server.port``, ``jsonrpc.request.id``;
* handshake (``initialize`` / ``server/discover``): era, requested and negotiated version,
  ``tools`` / ``tools.listChanged`` capabilities, server name and version;
* ``tools/list`` pages: page index, keyed hashes of the cursor and ``nextCursor``, tool count, page
  digest, ``mcp_health.evidence.origin`` (``internal`` for lists the SDK sends by itself inside
  ``call_tool``); on the last page of an unbroken traversal the whole catalog's digest and size
  and, with an approved catalog, its approval (names and counts only);
* ``tools/call``: ``gen_ai.tool.name``, ``error.type`` (JSON-RPC code, ``tool_error``, ``timeout``,
  a transport outcome, an HTTP status, or an exception class), transport outcome and whether the
  request was written, HTTP status, the ``WWW-Authenticate`` error code and required scope names,
  ``isError``, timeout and deadline, output-schema verdict, ``readOnlyHint``, and the call-time
  contract check against the last discovery (unknown tool / missing required argument *names*)
  and, with an approved catalog, whether the called tool is approved; when an agent's model
  request offered tools of the call's server (``record_model_request``, fed by the LLM client
  hooks), that agent's bounded label, whether the call was tied to it, and what it was offered
  compared with the same discovery (counts, a digest, capped names: docs/model.md#agents);
* progress notifications: one ``mcp_health.progress`` event per notification (value, total, token
  match; never the message);
* ``notifications/tools/list_changed``: a SERVER span at its arrival;
* ``mcp_health.call.waiting_for_user`` on an open ``tools/call`` span while the server's
  elicitation waits on the user;
* ``mcp_health.session.end``: an INTERNAL span when a ``ClientSession`` closes (the processor
  releases that session's state);
* metrics ``mcp.client.operation.duration`` and ``mcp.client.session.duration`` (seconds).

Applications or frameworks that install tools for their agent themselves report them with
:func:`record_installed_tools`.

Higher-level clients
--------------------
Anything built on ``mcp.ClientSession`` is covered (``mcp.Client``, ``ClientSessionGroup``,
FastMCP's ``Client``, ``langchain-mcp-adapters``). When such a client already traces a request
with its own open CLIENT span (``mcp.method.name`` equal to the request's), that span is enriched
with the evidence instead of adding a second one (semconv: do not duplicate an outer
instrumentation's span); its owner ends it. The span processor judges it by that evidence, counts
it in flight, and holds it for its outcome receipt (an ``mcp_health.outcome`` span) when the
tool has a verifier.

Limits
------
* Sessions *entered* before ``instrument()`` keep the SDK's notification/request handlers
  unwrapped (no ``list_changed`` spans for them); requests are still traced.
* ``network.transport`` is left out in-process (semconv has no value for it) and for streams an
  application builds itself; a session is stdio exactly when its write stream is the one the
  SDK's ``stdio_client`` yielded, whichever task opened it.
* Progress naming another request's token is only attributable where the notification carries
  the request's context (mcp 2.x streamable HTTP); elsewhere the SDK drops it unseen.
* mcp 1.x does not show the moment a request is written: a host cancellation after the request
  started counts as silence.

Suppression and safety
----------------------
Inside ``opentelemetry.instrumentation.utils.suppress_instrumentation()`` nothing is recorded. The
instrumentation never changes what the application sees: the same result objects, the same
exceptions, no new ones; any failure of our own code is logged at debug level on the
``otel_mcp_health`` loggers and dropped. Settings: :mod:`otel_mcp_health.environment_variables`.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.metrics import get_meter
from opentelemetry.trace import get_tracer

from otel_mcp_health import _options, verifiers
from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import (
    _agents,
    _approval,
    _catalog_hooks,
    _compat,
    _outcomes,
    _servers,
    _state,
)
from otel_mcp_health.package import _instruments
from otel_mcp_health.version import __version__

_logger = logging.getLogger(__name__)

_DURATION_UNIT = "s"


class McpHealthInstrumentor(BaseInstrumentor):  # type: ignore[misc]  # BaseInstrumentor is untyped
    """Instruments ``mcp`` client sessions; see the module documentation."""

    def instrumentation_dependencies(self) -> Collection[str]:
        """The supported ``mcp`` range (from :data:`otel_mcp_health.package._instruments`)."""
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        tracer = get_tracer(__name__, __version__, kwargs.get("tracer_provider"))
        meter = get_meter(__name__, __version__, kwargs.get("meter_provider"))
        _state.TELEMETRY = _state.Telemetry(
            tracer=tracer,
            operation_duration=meter.create_histogram(
                A.METRIC_MCP_CLIENT_OPERATION_DURATION,
                unit=_DURATION_UNIT,
                description="Duration of an MCP request as observed by the client.",
                explicit_bucket_boundaries_advisory=list(A.DURATION_BUCKETS),
            ),
            session_duration=meter.create_histogram(
                A.METRIC_MCP_CLIENT_SESSION_DURATION,
                unit=_DURATION_UNIT,
                description="Duration of an MCP client session.",
                explicit_bucket_boundaries_advisory=list(A.DURATION_BUCKETS),
            ),
            idle_window_s=_options.idle_window_s(),
            digests=_options.catalog_digests(),
            max_pages=_options.max_pages_(),
            pins=_pins(kwargs.get("approved_catalog")),
        )
        _compat.wrap_hooks(_state.TELEMETRY)
        # Zero-code outcome verifiers: the policy file OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES.
        verifiers.install_from_env()
        from otel_mcp_health import frameworks  # they report through this instrumentation

        frameworks.register_hooks(frameworks.FRAMEWORKS)
        from otel_mcp_health import model_requests  # what each LLM request offers its model

        frameworks.register_hooks(model_requests.MODEL_CLIENTS)

    def _uninstrument(self, **kwargs: Any) -> None:
        from otel_mcp_health import frameworks

        frameworks.unwrap_hooks()
        _compat.unwrap_hooks()
        _state.TELEMETRY = None
        _outcomes.reset()
        _servers.SERVERS.clear()
        _agents.reset()
        verifiers.uninstall_from_env()  # code registrations and other policies stay


def _pins(given: Any) -> _approval.Pins | None:
    """The approved catalog (``approved_catalog=`` or the environment), read once, or ``None``."""
    path = _options.approved_catalog_(given)
    return _approval.load(path) if path is not None else None


def record_installed_tools(session: object, tools: Iterable[Any]) -> None:
    """Report the tool definitions the application exposes to its agent (docs/model.md#catalog,
    ``registered``).

    ``session`` is the ``ClientSession`` the tools came from, or anything with a ``.session``
    attribute holding one (such as ``mcp.Client``). ``tools`` are ``mcp.types.Tool`` models or
    JSON-shaped dicts with wire (camelCase) member names. The canonical digest is computed in memory
    and an ``mcp_health.install`` span records it with the session key; the definitions themselves
    are never exported. Never raises: if the instrumentation is not active, the session is unknown
    or anything fails, it logs at debug level and returns.

    .. versionadded:: 0.1.0
    """
    telemetry = _state.TELEMETRY
    if telemetry is None or not is_instrumentation_enabled():
        return
    try:
        _catalog_hooks.installed_tools(telemetry, session, tools)
    except Exception:
        _logger.debug("mcp_health: record_installed_tools failed; ignored", exc_info=True)


#: The session of the latest application ``tools/list`` in this context. An agent framework's
#: hooks (:mod:`otel_mcp_health.frameworks`) clear it around the framework's own listing and read
#: it after: the framework installs the tools of that session. Not public API (not in ``__all__``).
LISTING = _state.LISTING
#: What an LLM client hook reports each request's offered tools to
#: (:mod:`otel_mcp_health.model_requests`). Not public API (not in ``__all__``).
record_model_request = _agents.record_model_request
#: What an LLM client hook reports each answer's tool calls through (the tie of a call made in
#: another task than its model request, docs/model.md#agents). Not public API.
answer_recorder = _agents.answer_recorder


def add_missing_evidence(evidence: str) -> None:
    """Add ``evidence`` to what the active instrumentation lacks: every call span from then on
    names it in ``mcp_health.evidence.missing``, as a missing SDK hook does (a framework whose
    hooks could not be installed). Not public API (not in ``__all__``)."""
    telemetry = _state.TELEMETRY
    if telemetry is not None and evidence not in telemetry.missing_evidence:
        telemetry.missing_evidence = (*telemetry.missing_evidence, evidence)


def report_reconciliation(
    session: object,
    tool_name: str,
    *,
    committed: bool,
    method: str = "destination_query",
    arguments: Mapping[str, Any] | None = None,
) -> bool:
    """Report what reconciliation found after a silent call (docs/model.md#silence).

    After a ``tools/call`` of a side-effecting tool timed out or lost its connection, its verdict
    is ``effect_unknown`` and a retry with the same arguments is flagged. Query the destination
    (``method="destination_query"``) or look the operation up by its idempotency key
    (``"idempotency_key"``), then report whether the effect was ``committed``:

    * ``committed=False``: the effect is confirmed absent; the call becomes ``tool_failed`` with
      next action ``retry_within_budget`` (now safe to retry).
    * ``committed=True``: the tool ran and only its answer was lost; the tool's outcome verifier
      (when one is registered and ``arguments`` are given) judges the destination, giving
      ``healthy``, ``false_success`` or, without a verifier, ``unverified``.

    ``session`` is the ``ClientSession`` (or an ``mcp.Client``); ``arguments``, when given, select
    the call with equal arguments (otherwise the latest silent call of ``tool_name``); they stay
    in memory. An ``mcp_health.reconcile`` span linked to the silent call carries the finding and,
    from the processor, the call's new verdict. Returns whether an unreconciled call was found.
    Never raises.

    .. versionadded:: 0.1.0
    """
    telemetry = _state.TELEMETRY
    if telemetry is None:
        return False
    try:
        return _outcomes.reconcile(
            telemetry, session, tool_name, committed=committed, method=method, arguments=arguments
        )
    except Exception:
        _logger.debug("mcp_health: report_reconciliation failed; ignored", exc_info=True)
        return False


def flush_receipts(timeout: float = 10.0) -> bool:
    """Wait until every outcome verifier that has started has delivered its receipt.

    A ``tools/call`` span whose tool has a verifier stays open until the receipt arrives (or the
    verifier's own timeout fires), after ``call_tool`` has returned. Call this before flushing or
    shutting down the tracer provider (end of a script, a test) so those spans are exported.
    Returns ``False`` if ``timeout`` seconds were not enough. Never raises.

    .. versionadded:: 0.1.0
    """
    try:
        return _outcomes.flush(timeout)
    except Exception:
        _logger.debug("mcp_health: flush_receipts failed; ignored", exc_info=True)
        return False


__all__ = [
    "McpHealthInstrumentor",
    "flush_receipts",
    "record_installed_tools",
    "report_reconciliation",
]
