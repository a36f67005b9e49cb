"""Outcome receipts and effect reconciliation for ``tools/call`` spans (private).

Two pieces of docs/model.md#layers to #incidents that need the call's *arguments* and *result*,
which only the instrumentation holds (in memory; nothing of either is exported):

* **Outcome verifiers.** After a call that returned without ``isError`` (and whose output passed
  its schema), the verifier chosen for the tool (:func:`otel_mcp_health.register_verifier`) runs on
  a small worker pool. The ``tools/call`` span stays open until the receipt arrives (or the
  verifier's timeout fires), then carries ``mcp_health.outcome.*`` and ends. The application's
  ``call_tool`` returns first: a verifier never delays, changes or breaks the call.
* **Reconciliation and retries.** A call that went silent (timeout, or a lost connection / reset /
  process exit after the request may have been written) on a tool not known to be read-only is
  remembered as *unreconciled*, keyed by session, tool and a keyed digest of the arguments
  (HMAC with a per-process random key: it stays in memory and is never exported). A later call
  with the same key is flagged ``mcp_health.retry.unreconciled`` on its span.
  :func:`report_reconciliation` records what a destination query or idempotency-key lookup found
  as an ``mcp_health.reconcile`` span linked to the silent call, so the processor can move that
  call's verdict (docs/model.md#silence), and lifts the retry block.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry.trace import Link, Span, SpanContext, SpanKind

from otel_mcp_health import attributes as A
from otel_mcp_health._codec import encode_effect, encode_outcome, encode_pending, encode_receipt
from otel_mcp_health.core.bounds import cap
from otel_mcp_health.core.evidence import (
    CallEvidence,
    EffectEvidence,
    OutcomeEvidence,
)
from otel_mcp_health.core.facts import Outcome
from otel_mcp_health.core.layers import is_silent
from otel_mcp_health.core.vocabulary import OUTCOME_NOT_REQUIRED
from otel_mcp_health.instrumentation import _servers, _state
from otel_mcp_health.instrumentation._keyed import KeyedHash
from otel_mcp_health.instrumentation._sdk import result_is_error
from otel_mcp_health.instrumentation._state import RequestRecord, SessionState, Slot, Telemetry
from otel_mcp_health.verifiers import CallContext, Receipt, Verifier, VerifierRunner, verifier_for

_logger = logging.getLogger(__name__)
#: A call whose effect needs no proof (its verifier policy says so): no receipt will come.
_NOT_REQUIRED_OUTCOME: Final = OutcomeEvidence(method=OUTCOME_NOT_REQUIRED, passed=None)
_NOT_REQUIRED: Final = encode_outcome(_NOT_REQUIRED_OUTCOME)

#: The keyed hash of the argument digests: equal arguments match inside one process only.
_ARGUMENTS: Final = KeyedHash()
#: Unreconciled silent calls remembered at once (oldest forgotten first).
MAX_UNRECONCILED: Final = 4096


def argument_digest(arguments: Any) -> str:
    """Keyed digest of a call's arguments, for retry correlation in memory (never exported)."""
    try:
        text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(arguments)
    return _ARGUMENTS.hexdigest(text)


@dataclass(frozen=True, slots=True)
class Unreconciled:
    """A silent call on a side-effecting tool: its span, to link the reconciliation to."""

    span_context: SpanContext
    tool: str


_Key = tuple[str, str, str]
_lock = threading.Lock()
_unreconciled: OrderedDict[_Key, Unreconciled] = OrderedDict()
#: Unreconciled calls per (session, tool): the argument digest is computed only when it can
#: matter (a call of a tool with a pending silent call, or a call that just went silent).
_pending: dict[tuple[str, str], int] = {}
_runner: VerifierRunner | None = None


def _verifier_runner() -> VerifierRunner:
    global _runner  # noqa: PLW0603 - one lazily created pool per process
    with _lock:
        if _runner is None:
            _runner = VerifierRunner()
        return _runner


def flush(timeout: float) -> bool:
    """Wait until every started verifier delivered its receipt (and ended its span)."""
    with _lock:
        runner = _runner
    return True if runner is None else runner.wait_idle(timeout)


def reset() -> None:
    """Forget every unreconciled call (``uninstrument`` and tests)."""
    with _lock:
        _unreconciled.clear()
        _pending.clear()


def _forget(key: _Key) -> None:
    """Bookkeeping of ``_pending`` when ``key`` leaves ``_unreconciled`` (lock held)."""
    tool = key[:2]
    left = _pending.get(tool, 0) - 1
    if left > 0:
        _pending[tool] = left
    else:
        _pending.pop(tool, None)


# ----------------------------------------------------------------------------------------------
# Hooks called by the ``call_tool`` wrapper (each inside its own fence)
# ----------------------------------------------------------------------------------------------
def before_call(state: SessionState, slot: Slot, name: Any, arguments: Any) -> None:
    """Remember the argument digest; flag a retry of a call whose effect is still unknown."""
    if not isinstance(name, str):
        return
    slot.arguments = arguments
    slot.checked = True
    with _lock:
        maybe = (state.key, name) in _pending
    if not maybe:
        return
    slot.argument_digest = argument_digest(arguments)
    with _lock:
        pending = (state.key, name, slot.argument_digest) in _unreconciled
    if pending:
        slot.attributes[A.RETRY_UNRECONCILED] = True


def _read_only(state: SessionState, name: str) -> bool | None:
    """The tool's ``readOnlyHint`` in the session's (else its server's) last discovery."""
    found = _servers.discovered(state)
    known = found.tools.get(name) if found is not None else None
    return known.read_only if known is not None else None


def after_failure(record: RequestRecord, slot: Slot, name: Any) -> None:
    """A call raised: if it went silent on a side-effecting tool, block retries until reconciled.

    Silence = a timeout, or a lost connection / reset / process exit unless the request is known
    not to have been written (docs/model.md#silence; annotations are hints, absent = side effect).
    """
    if not isinstance(name, str) or not slot.checked:
        return
    if not is_silent(_silence_evidence(record)) or _read_only(record.state, name) is True:
        return
    digest = slot.argument_digest or argument_digest(slot.arguments)
    key = (record.state.key, name, digest)
    with _lock:
        if key not in _unreconciled:
            _pending[key[:2]] = _pending.get(key[:2], 0) + 1
        _unreconciled[key] = Unreconciled(record.span.get_span_context(), name)
        _unreconciled.move_to_end(key)
        while len(_unreconciled) > MAX_UNRECONCILED:
            _forget(_unreconciled.popitem(last=False)[0])


def _silence_evidence(record: RequestRecord) -> CallEvidence:
    """What the core's one silence rule reads: the call record built from the observations."""
    return record.records().request.call


def _context(name: str, arguments: Any, result: Any, state: SessionState) -> CallContext:
    structured = getattr(result, "structured_content", None)
    texts = [getattr(block, "text", None) for block in getattr(result, "content", None) or ()]
    return CallContext(
        tool=name,
        arguments=arguments if isinstance(arguments, Mapping) else {},
        result=result,
        structured=structured if isinstance(structured, Mapping) else {},
        text="\n".join(t for t in texts if isinstance(t, str)),
        server=state.server_name,
        read_only=_read_only(state, name),
    )


def _policy(state: SessionState, name: str) -> Verifier | str | None:
    """The tool's verifier: by name, server (handshake name) and ``readOnlyHint``."""
    return verifier_for(name, server=state.server_name, read_only=_read_only(state, name))


def receipt_attributes(receipt: Receipt, duration_s: float) -> dict[str, Any]:
    """The exported part of a receipt: method, result, confidence, duration; no values."""
    attrs = encode_receipt(receipt.method, receipt.result, receipt.confidence)
    attrs[A.OUTCOME_DURATION_S] = duration_s
    if receipt.reason is not None:
        # A built-in verifier's reason is a ReceiptReason member; the span holds its plain string.
        attrs[A.OUTCOME_REASON] = str(receipt.reason)
    return attrs


def after_success(
    record: RequestRecord, slot: Slot, name: Any, arguments: Any, result: Any
) -> None:
    """A call returned: apply the tool's outcome policy, or arrange for its verifier.

    Runs before the span ends. With a verifier, the span's end is handed to the receipt
    (``record.end_deferred``): ``finish`` records the call's evidence and duration, then starts
    the verifier, whose receipt callback sets the outcome and ends the span.
    """
    if not isinstance(name, str) or not record.recording:
        return
    policy = _policy(record.state, name)
    if policy is None:
        return
    if policy == OUTCOME_NOT_REQUIRED:
        record.observe(Outcome(_NOT_REQUIRED_OUTCOME))
        return
    if not isinstance(policy, Verifier):
        return
    schema_failed = record.records().seen.output_schema_valid is False
    if result_is_error(result) is not False or schema_failed:
        return  # the execution layer failed: there is no promised artefact to verify
    call = _context(name, arguments, result, record.state)
    if record.borrowed:
        _verify_borrowed(record, policy, call)
        return
    span = record.span

    def start() -> None:  # called by ``finish`` once the call's own evidence is on the span
        try:
            _verify_then_end(span, policy, call)
        except Exception:  # could not start a thread: never leave the span open
            span.end()
            raise

    record.on_finished = start
    record.end_deferred = True  # last: if anything above failed, the span ends as usual


# ----------------------------------------------------------------------------------------------
# Public API: report what reconciliation found
# ----------------------------------------------------------------------------------------------
def reconcile(
    telemetry: Telemetry,
    session: Any,
    tool_name: str,
    *,
    committed: bool,
    method: str,
    arguments: Any,
) -> bool:
    """Record a reconciliation for the latest unreconciled silent call of ``tool_name``.

    ``session``: a ``ClientSession`` or an ``mcp.Client``. With ``arguments``, only a call with
    equal arguments matches. Emits an INTERNAL ``mcp_health.reconcile`` span linked to the silent
    call; when the effect is confirmed and the tool has a verifier, the verifier judges the
    destination like after a completed call (its receipt on that span). Returns: one was found.
    """
    state = _state.session_state(session)
    found = _take_unreconciled(state, tool_name, arguments) if state is not None else None
    if state is None or found is None:
        return False
    attrs: dict[str, Any] = {
        A.SESSION_KEY: state.key,
        A.GEN_AI_TOOL_NAME: cap(tool_name),
        **encode_effect(EffectEvidence(observed=committed, method=method)),
    }
    span = telemetry.tracer.start_span(
        A.RECONCILE_SPAN_NAME,
        kind=SpanKind.INTERNAL,
        attributes=attrs,
        links=[Link(found.span_context)],
    )
    policy = _policy(state, tool_name)
    if committed and policy == OUTCOME_NOT_REQUIRED:
        span.set_attributes(_NOT_REQUIRED)
    if committed and isinstance(policy, Verifier) and arguments is not None:
        _verify_then_end(span, policy, _context(tool_name, arguments, None, state))
    else:
        span.end()
    return True


def _take_unreconciled(state: SessionState, tool_name: str, arguments: Any) -> Unreconciled | None:
    """The latest silent call of the tool (with equal arguments, when given), forgotten."""
    digest = argument_digest(arguments) if arguments is not None else None
    with _lock:
        keys = [
            key
            for key in _unreconciled
            if key[0] == state.key and key[1] == tool_name and digest in (None, key[2])
        ]
        if not keys:
            return None
        _forget(keys[-1])
        return _unreconciled.pop(keys[-1])


def _verify_borrowed(record: RequestRecord, verifier: Verifier, call: CallContext) -> None:
    """Another library owns the call span and ends it now: the receipt goes on an
    ``mcp_health.outcome`` span linked to it, and the processor holds the call until then."""
    telemetry = _state.TELEMETRY
    if telemetry is None:
        return
    tracer, context, key = telemetry.tracer, record.span.get_span_context(), record.state.key

    def start() -> None:
        receipt = tracer.start_span(
            A.OUTCOME_SPAN_NAME,
            kind=SpanKind.INTERNAL,
            attributes={A.SESSION_KEY: key},
            links=[Link(context)],
        )
        _verify_then_end(receipt, verifier, call)

    record.span.set_attributes(encode_pending())
    record.on_finished = start


def _verify_then_end(span: Span, verifier: Verifier, call: CallContext) -> None:
    def deliver(receipt: Receipt, duration_s: float) -> None:
        try:
            span.set_attributes(receipt_attributes(receipt, duration_s))
        finally:
            span.end()

    _verifier_runner().submit(verifier, call, deliver)
