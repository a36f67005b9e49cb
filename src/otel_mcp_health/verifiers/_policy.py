"""Outcome policies: the verifier of each tool, declared in a TOML file (docs/outcomes.md).

``OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES=/path/outcomes.toml`` names the file; the instrumentor
loads it when it instruments (:func:`install_from_env`; in code: :meth:`OutcomePolicy.load` and
:meth:`OutcomePolicy.install`). Each ``[[outcome]]`` table matches tools
by a glob on the name (optionally on the server's handshake name and the tool's
``readOnlyHint``) and names their verifier; the first match wins, after the tools registered in
code (:func:`~otel_mcp_health.register_verifier`), which keep their own verifier.

A file that cannot be read, does not parse or has one bad entry installs **no** verifier: one
warning names the file, the entry and the key (never a value), and every call reads
``unverified``, never green. ``otel-mcp-health outcomes FILE`` checks a policy offline.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_mcp_health import environment_variables as env
from otel_mcp_health.verifiers._policy_parse import (
    Entry,
    OutcomePolicyError,
    parse_document,
    read_document,
)
from otel_mcp_health.verifiers._registry import PolicyRule, rules, set_rules

_logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class OutcomePolicy:
    """A validated outcome policy: where it came from and its entries, in their order.

    .. versionadded:: 0.1.0
    """

    source: str
    entries: tuple[Entry, ...]

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, strict: bool = False) -> OutcomePolicy:
        """Read and validate a policy file; raises :class:`OutcomePolicyError` naming every
        problem (entry and key, never a value).

        ``strict`` also imports every ``python`` and entry-point verifier now and refuses the file
        when one cannot be imported (``otel-mcp-health outcomes``); otherwise such a verifier is
        imported again at its first call.
        """
        source = str(path)
        return cls(source, parse_document(read_document(Path(path)), source, strict=strict))

    @classmethod
    def from_entries(cls, entries: Sequence[Mapping[str, Any]], source: str) -> OutcomePolicy:
        """A policy from ``[[outcome]]`` tables given as mappings (validated the same way)."""
        return cls(source, parse_document({"outcome": list(entries)}, source))

    def match(
        self, tool: str, server: str | None = None, read_only: bool | None = None
    ) -> Entry | None:
        """The entry that decides for a call of ``tool`` (the first that matches), if any."""
        return next((e for e in self.entries if e.rule.matches(tool, server, read_only)), None)

    def install(self) -> None:
        """Make this the process's outcome policy (replacing the previous one); the tools
        registered in code keep their own verifier."""
        set_rules(self._rules())

    def uninstall(self) -> None:
        """Forget this policy, if it is still the installed one."""
        if rules() == self._rules():
            set_rules(())

    def _rules(self) -> tuple[PolicyRule, ...]:
        return tuple(entry.rule for entry in self.entries)


#: The policy :func:`install_from_env` installed, for :func:`uninstall_from_env`.
_from_env: OutcomePolicy | None = None


def uninstall_from_env() -> None:
    """Forget the policy :func:`install_from_env` installed (code registrations stay)."""
    global _from_env
    policy, _from_env = _from_env, None
    if policy is not None:
        policy.uninstall()


def install_from_env() -> OutcomePolicy | None:
    """Install the policy ``OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES`` names, if any.

    Never raises: a bad file is one warning (file, entry, key) and installs nothing.
    """
    global _from_env  # noqa: PLW0603 - the one policy the environment names
    raw = os.environ.get(env.OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES, "").strip()
    if not raw:
        return None
    try:
        policy = OutcomePolicy.load(raw)
    except OutcomePolicyError as exc:
        more = len(exc.problems) - 1
        _logger.warning(
            "mcp_health: outcome policy %s refused (%s%s); no outcome verifier from it, so "
            "its tools read unverified (check it with: otel-mcp-health outcomes FILE)",
            exc.source,
            exc.problems[0],
            f"; and {more} more problem{'s' * (more > 1)}" if more else "",
        )
        return None
    except Exception as exc:  # noqa: BLE001 - never break the host at start-up; the message may quote the file
        _logger.warning(
            "mcp_health: outcome policy %s refused (%s while reading it); no outcome verifier "
            "from it, so its tools read unverified",
            raw,
            type(exc).__name__,
        )
        return None
    policy.install()
    _from_env = policy
    return policy


def describe(entry: Entry) -> str:
    """One line saying what an entry matches and how it verifies (no template, no value)."""
    rule = entry.rule
    matches = [f"tool {rule.tool!r}"]
    if rule.server is not None:
        matches.append(f"server {rule.server!r}")
    if rule.read_only is not None:
        matches.append("read-only tools" if rule.read_only else "tools not marked read-only")
    verifies = entry.kind
    if not isinstance(rule.choice, str):
        verifies = f"{entry.kind} (receipt method {rule.choice.method})"
    reads = f"; reads arguments {', '.join(entry.reads)}" if entry.reads else ""
    return f"entry {entry.index}: {', '.join(matches)} -> {verifies}{reads}"
