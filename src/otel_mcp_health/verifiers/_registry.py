"""The registry: the outcome verifier of each tool, chosen before the call."""

from __future__ import annotations

import threading
from typing import Final

from otel_mcp_health.core.vocabulary import OUTCOME_NOT_REQUIRED
from otel_mcp_health.verifiers._receipts import Verifier, VerifierFn

DEFAULT_TIMEOUT_S: Final = 5.0

_lock = threading.Lock()
_verifiers: dict[str, Verifier] = {}
_not_required: set[str] = set()


def register_verifier(
    tool_name: str,
    verifier: VerifierFn,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    method: str | None = None,
) -> None:
    """Choose the outcome verifier for every later call of ``tool_name``.

    ``verifier`` receives a :class:`CallContext` and returns a :class:`Receipt` (or ``True`` /
    ``False`` / ``None`` for passed / failed / inconclusive). ``method`` defaults to the built-in
    verifier's method or the function's name.

    .. versionadded:: 0.1.0
    """
    if timeout <= 0:
        msg = "timeout must be positive"
        raise ValueError(msg)
    name = method or getattr(verifier, "method", None) or getattr(verifier, "__name__", "callable")
    with _lock:
        _not_required.discard(tool_name)
        _verifiers[tool_name] = Verifier(fn=verifier, method=str(name), timeout=timeout)


def outcome_not_required(tool_name: str) -> None:
    """Declare that ``tool_name`` needs no outcome receipt (recorded as ``not_required``).

    This is a policy, not a receipt: such calls can be ``healthy`` but never count as verified
    outcomes. Use it for read-only lookups whose answer *is* the outcome.

    .. versionadded:: 0.1.0
    """
    with _lock:
        _verifiers.pop(tool_name, None)
        _not_required.add(tool_name)


def unregister_verifier(tool_name: str) -> None:
    """Forget the verifier or the ``not_required`` policy of ``tool_name``."""
    with _lock:
        _verifiers.pop(tool_name, None)
        _not_required.discard(tool_name)


def clear_verifiers() -> None:
    """Forget every verifier and policy (tests, reconfiguration)."""
    with _lock:
        _verifiers.clear()
        _not_required.clear()


def verifier_for(tool_name: str) -> Verifier | str | None:
    """The verifier chosen for ``tool_name``, ``"not_required"``, or ``None``."""
    with _lock:
        if tool_name in _not_required:
            return OUTCOME_NOT_REQUIRED
        return _verifiers.get(tool_name)
