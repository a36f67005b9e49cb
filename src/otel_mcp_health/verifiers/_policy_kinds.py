"""The verifier of each kind of policy entry, built from the built-in verifiers (private).

An outcome policy builds the objects the in-code API builds: :func:`file_digest`,
:func:`http_status` and :func:`sqlite_row` from :mod:`._builtins`, wrapped by :class:`Templated`
so their path, URL or database comes from the call's arguments (expanded at verification time,
in memory), and for ``python`` and ``entry_point`` a verifier named by reference
(:class:`Imported`). Every one is registered through :func:`make_verifier`.
"""

from __future__ import annotations

import importlib
import logging
import re
import sqlite3
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from otel_mcp_health.core.vocabulary import OutcomeResult
from otel_mcp_health.verifiers._builtins import file_digest, http_status, sqlite_row
from otel_mcp_health.verifiers._receipts import CallContext, Receipt, Verifier, VerifierFn
from otel_mcp_health.verifiers._registry import make_verifier
from otel_mcp_health.verifiers._templates import Template, Unexpandable, argument

_logger = logging.getLogger(__name__)

#: Reason of the ``inconclusive`` receipt of a ``python`` or ``entry_point`` verifier that
#: cannot be imported, or is not callable.
REASON_UNAVAILABLE: Final = "verifier_unavailable"
#: Reason of the ``inconclusive`` receipt of a ``sqlite`` verifier whose database file is absent.
REASON_DATABASE_UNAVAILABLE: Final = "database_unavailable"
#: An HTTP verifier's receipt arrives within its request's timeout plus this margin.
_HTTP_MARGIN_S: Final = 1.0
#: Named parameters of a query (``:order_id``), found outside its quoted literals.
_PARAMETER: Final = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_QUOTED: Final = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")

Build = Callable[[Mapping[str, str], CallContext], Receipt]


class Templated:
    """A built-in verifier whose values are templates over the call's arguments.

    Expands every template (and checks every argument ``needs`` names), then runs ``build``;
    a call whose arguments cannot fill them gives an ``inconclusive`` receipt with the reason.
    """

    def __init__(
        self,
        method: str,
        templates: Mapping[str, Template],
        build: Build,
        *,
        quoted: frozenset[str] = frozenset(),
        needs: tuple[str, ...] = (),
    ) -> None:
        self.method = method
        self._templates, self._build, self._quoted, self._needs = templates, build, quoted, needs

    def __call__(self, call: CallContext) -> Receipt:
        try:
            for name in self._needs:
                argument(call.arguments, name)
            values = {
                key: template.expand(call.arguments, quote=key in self._quoted)
                for key, template in self._templates.items()
            }
        except Unexpandable as exc:
            return Receipt(OutcomeResult.INCONCLUSIVE, self.method, None, exc.reason)
        return self._build(values, call)


def file_verifier(path: Template, sha256: Template | None, timeout: float) -> Verifier:
    """``verify = "file"``: :func:`file_digest` on the expanded path (and digest)."""
    templates = {"path": path} if sha256 is None else {"path": path, "sha256": sha256}

    def build(values: Mapping[str, str], call: CallContext) -> Receipt:
        return file_digest(path=values["path"], expected_sha256=values.get("sha256"))(call)

    return make_verifier(Templated(file_digest.method, templates, build), timeout=timeout)


def http_verifier(url: Template, status: int, timeout: float) -> Verifier:
    """``verify = "http"``: :func:`http_status` on the expanded URL."""

    def build(values: Mapping[str, str], call: CallContext) -> Receipt:
        return http_status(url=values["url"], expected=status, timeout=timeout)(call)

    fn = Templated(http_status.method, {"url": url}, build, quoted=frozenset({"url"}))
    return make_verifier(fn, timeout=timeout + _HTTP_MARGIN_S)


def query_parameters(query: str) -> tuple[str, ...]:
    """The named parameters (``:name``) of an SQL query, each once, in order."""
    return tuple(dict.fromkeys(_PARAMETER.findall(_QUOTED.sub("''", query))))


def sqlite_verifier(database: Template, query: str, timeout: float) -> Verifier:
    """``verify = "sqlite"``: :func:`sqlite_row`, read-only, parameters from the arguments."""
    names = query_parameters(query)

    def build(values: Mapping[str, str], call: CallContext) -> Receipt:
        path = Path(values["database"])
        if not path.is_file():
            reason = REASON_DATABASE_UNAVAILABLE
            return Receipt(OutcomeResult.INCONCLUSIVE, sqlite_row.method, None, reason)
        uri = path.resolve().as_uri() + "?mode=ro"  # a verifier never writes, nor creates a file
        row = sqlite_row(
            connect=lambda: sqlite3.connect(uri, uri=True, timeout=timeout),
            query=query,
            params={name: call.arguments[name] for name in names},
        )
        return row(call)

    fn = Templated(sqlite_row.method, {"database": database}, build, needs=names)
    return make_verifier(fn, timeout=timeout)


class Imported:
    """A verifier named by reference, imported once: when the policy loads, or else (the agent's
    modules may not be importable yet when ``opentelemetry-instrument`` starts) at its first call.

    One that cannot be imported or is not callable gives ``inconclusive`` receipts
    (``verifier_unavailable``) and one warning naming ``where`` (the policy file, entry and key)
    and the exception's type, never its message. ``load_error`` is the type of the exception
    the load-time attempt met (``None`` when it succeeded).
    """

    def __init__(self, load: Callable[[], object], method: str, where: str) -> None:
        self.method, self._load, self._where = method, load, where
        self._lock = threading.Lock()
        self._retried = False
        self.load_error: str | None = None
        self._fn = self._attempt(warn=False)

    def _attempt(self, *, warn: bool) -> VerifierFn | None:
        try:
            loaded = self._load()
        except Exception as exc:  # noqa: BLE001 - a policy's callable is user code: its failure is a load error, recorded
            self.load_error = type(exc).__name__
        else:
            if callable(loaded):
                return loaded
            self.load_error = "not callable"
        if warn:
            _logger.warning(
                "mcp_health: outcome policy %s: cannot use the verifier (%s); its calls read "
                "unverified (verifier_unavailable)",
                self._where,
                self.load_error,
            )
        return None

    def resolve(self) -> VerifierFn | None:
        """The verifier function; imported again once if the load-time attempt failed."""
        with self._lock:
            if self._fn is None and not self._retried:
                self._retried = True
                self._fn = self._attempt(warn=True)
            return self._fn

    def __call__(self, call: CallContext) -> Any:
        fn = self.resolve()
        if fn is None:
            return Receipt(OutcomeResult.INCONCLUSIVE, self.method, None, REASON_UNAVAILABLE)
        return fn(call)


def load_reference(reference: str) -> Callable[[], object]:
    """A loader of ``package.module:function`` (the attribute may be dotted)."""
    module_name, _, attribute = reference.partition(":")

    def load() -> object:
        found: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
        return found

    return load


def imported_verifier(
    load: Callable[[], object], method: str, where: str, timeout: float
) -> Verifier:
    """``verify = "python"`` or ``"entry_point"``: the referenced function of the call."""
    return make_verifier(Imported(load, method, where), timeout=timeout, method=method)
