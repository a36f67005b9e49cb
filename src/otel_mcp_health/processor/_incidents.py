"""What the span processor keeps across sessions about failures (private).

Silent calls awaiting their reconciliation span (:class:`SilentCalls`) and open incidents
(:class:`Incidents`) outlive the session that failed: a reconciliation or a healthy call often
comes after it has closed. Both are bounded LRU maps; the processor's lock guards every use.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry.sdk.resources import Resource

from otel_mcp_health import _codec
from otel_mcp_health import attributes as A
from otel_mcp_health.core.calls import CallResult
from otel_mcp_health.core.evidence import CallEvidence, HandshakeEvidence
from otel_mcp_health.core.retries import over_budget
from otel_mcp_health.core.server import IncidentScope
from otel_mcp_health.core.vocabulary import CatalogVerdict, Verdict
from otel_mcp_health.processor._verdicts import incident_key

#: Silent calls (``effect_unknown``) kept by the processor, awaiting their reconciliation span.
MAX_SILENT = 4096
#: Open incident keys kept by the processor.
MAX_INCIDENTS = 4096
#: Verdicts that open no incident: nothing failed (``unverified`` lacks a receipt, it is not an
#: outage; ``working`` is live).
_NO_INCIDENT: Final = frozenset({Verdict.HEALTHY, Verdict.UNVERIFIED, Verdict.WORKING})
_SERVICE_NAME: Final = "service.name"
_UNKNOWN: Final = "unknown"


@dataclass(frozen=True, slots=True)
class SilentCall:
    """A call judged ``effect_unknown``, as its reconciliation will need it again."""

    call: CallEvidence
    handshake: HandshakeEvidence | None
    catalog_verdict: CatalogVerdict


class SilentCalls:
    """Silent calls by span id (the ``mcp_health.reconcile`` span links to one), bounded LRU."""

    def __init__(self, capacity: int = MAX_SILENT) -> None:
        self._calls: OrderedDict[int, SilentCall] = OrderedDict()
        self._capacity = capacity

    def remember(self, span_id: int, silent: SilentCall) -> None:
        """Keep a silent call until its reconciliation (the oldest is forgotten first)."""
        self._calls[span_id] = silent
        while len(self._calls) > self._capacity:
            self._calls.popitem(last=False)

    def take(self, span_id: int) -> SilentCall | None:
        """The silent call a reconciliation links to (forgotten once taken)."""
        return self._calls.pop(span_id, None)

    def clear(self) -> None:
        """Forget everything (shutdown)."""
        self._calls.clear()


class Incidents:
    """Open incident keys (docs/model.md#incidents), bounded LRU, cleared per server on a healthy
    call."""

    def __init__(self, capacity: int = MAX_INCIDENTS) -> None:
        self._open: OrderedDict[str, tuple[IncidentScope | None, int]] = OrderedDict()
        self._capacity = capacity
        self._resource: Resource | None = None
        self._service_name = _UNKNOWN

    def judge(
        self,
        resource: Resource,
        server: IncidentScope | None,
        result: CallResult,
        verdicts: dict[str, Any],
    ) -> bool:
        """Key a non-green verdict as an incident of the server of scope ``server`` (its target
        key when known, process-local: two gateway paths on one host and port are two servers),
        writing its key, attempt and budget into ``verdicts`` (the key is scoped to the
        ``service.name`` of the span's ``resource``); a healthy call clears that server's
        incidents only. Whether this failure opened a new incident."""
        verdict, layer = result.verdict, result.first_failed_layer
        if verdict is Verdict.HEALTHY:
            self.clear_server(server)
            return False
        if verdict in _NO_INCIDENT:
            return False
        material = _codec.scope_material(server)
        key = incident_key(self._service(resource), material, layer.value, result.reason)
        verdicts[A.INCIDENT_KEY] = key
        attempt = self.open(key, server)
        verdicts[A.INCIDENT_ATTEMPT] = attempt
        if over_budget(verdict, layer, result.reason, attempt):
            verdicts[A.RETRY_OVER_BUDGET] = True
        return attempt == 1

    def _service(self, resource: Resource) -> str:
        """``service.name`` of the span's resource (one resource per provider: read once, and
        only for a call that opens or repeats an incident)."""
        if resource is not self._resource:
            name = resource.attributes.get(_SERVICE_NAME, _UNKNOWN)
            self._resource, self._service_name = resource, str(name)
        return self._service_name

    def open(self, key: str, server: IncidentScope | None) -> int:
        """Record a failure of incident ``key``; return its attempt number (1 = newly opened)."""
        previous = self._open.pop(key, None)
        attempt = 1 if previous is None else previous[1] + 1
        self._open[key] = (server, attempt)
        while len(self._open) > self._capacity:
            self._open.popitem(last=False)
        return attempt

    def clear_server(self, server: IncidentScope | None) -> None:
        """A call to the server of scope ``server`` (``None``: a server no span named) passed every
        layer, outcome included: its incidents clear."""
        for key in [k for k, (s, _) in self._open.items() if s == server]:
            del self._open[key]

    def clear(self) -> None:
        """Forget everything (shutdown)."""
        self._open.clear()
