"""The registry: the outcome verifier of each tool, chosen before the call.

Two tiers, asked in this order: the tools registered in code (:func:`register_verifier`,
:func:`outcome_not_required`; an exact tool name), then the rules of the installed outcome policy
(:func:`set_rules`, built from a policy file by :mod:`._policy`; globs, first match wins). A tool
registered in code keeps its code verifier whatever the policy says.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Final

from otel_mcp_health.core.vocabulary import OUTCOME_NOT_REQUIRED
from otel_mcp_health.verifiers._receipts import Verifier, VerifierFn

DEFAULT_TIMEOUT_S: Final = 5.0

_lock = threading.Lock()
_verifiers: dict[str, Verifier] = {}
_not_required: set[str] = set()


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """One policy rule: which tools it matches, and their verifier or ``"not_required"``.

    ``tool`` and ``server`` are case-sensitive ``fnmatch`` globs (``server`` on the server's
    handshake name; a session whose server gave no name matches no ``server`` glob);
    ``read_only=True`` matches only tools the server annotates ``readOnlyHint: true``,
    ``read_only=False`` only the others.
    """

    tool: str
    choice: Verifier | str
    server: str | None = None
    read_only: bool | None = None

    def matches(self, tool: str, server: str | None, read_only: bool | None) -> bool:
        """Whether a call of ``tool`` on ``server`` (with this ``readOnlyHint``) is covered."""
        if self.read_only is not None and self.read_only != (read_only is True):
            return False
        if self.server is not None and (server is None or not fnmatchcase(server, self.server)):
            return False
        return fnmatchcase(tool, self.tool)


_rules: tuple[PolicyRule, ...] = ()


def make_verifier(fn: VerifierFn, *, timeout: float, method: str | None = None) -> Verifier:
    """The registered form of a verifier: ``method`` defaults to the built-in verifier's method
    or the function's name (shared by :func:`register_verifier` and the outcome policy)."""
    if not timeout > 0:
        msg = "timeout must be positive"
        raise ValueError(msg)
    name = method or getattr(fn, "method", None) or getattr(fn, "__name__", "callable")
    return Verifier(fn=fn, method=str(name), timeout=timeout)


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
    chosen = make_verifier(verifier, timeout=timeout, method=method)
    with _lock:
        _not_required.discard(tool_name)
        _verifiers[tool_name] = chosen


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


def set_rules(rules: Sequence[PolicyRule]) -> tuple[PolicyRule, ...]:
    """Replace the policy tier with ``rules`` (first match wins); returns the previous rules."""
    global _rules
    with _lock:
        previous, _rules = _rules, tuple(rules)
    return previous


def rules() -> tuple[PolicyRule, ...]:
    """The policy tier's rules, in their order."""
    with _lock:
        return _rules


def clear_verifiers() -> None:
    """Forget every verifier and policy, in code and from a policy file (tests, reconfiguring)."""
    set_rules(())
    with _lock:
        _verifiers.clear()
        _not_required.clear()


def verifier_for(
    tool_name: str, *, server: str | None = None, read_only: bool | None = None
) -> Verifier | str | None:
    """The verifier chosen for ``tool_name``, ``"not_required"``, or ``None``.

    The code's registration of the exact name first, then the first policy rule that matches
    the tool, the server's handshake name and the tool's ``readOnlyHint``.
    """
    with _lock:
        if tool_name in _not_required:
            return OUTCOME_NOT_REQUIRED
        chosen = _verifiers.get(tool_name)
        if chosen is not None:
            return chosen
        current = _rules
    for rule in current:
        if rule.matches(tool_name, server, read_only):
            return rule.choice
    return None
