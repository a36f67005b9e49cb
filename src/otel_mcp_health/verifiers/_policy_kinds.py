"""The verifier of each kind of policy entry, built from the built-in verifiers (private).

An outcome policy builds the objects the in-code API builds: :func:`file_digest`,
:func:`http_status` and :func:`sqlite_row` from :mod:`._builtins`, wrapped by :class:`Templated`
so their path, URL or database comes from the call's arguments (expanded at verification time,
in memory), and for ``python`` and ``entry_point`` a verifier named by reference
(:class:`Imported`). Every one is registered through :func:`make_verifier`.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import re
import sqlite3
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from otel_mcp_health.core.reasons import ReceiptReason
from otel_mcp_health.core.vocabulary import OutcomeResult
from otel_mcp_health.verifiers._builtins import (
    MAX_DIGEST_BYTES,
    file_digest,
    http_status,
    is_file,
    sqlite_row,
)
from otel_mcp_health.verifiers._receipts import CallContext, Receipt, Verifier, VerifierFn
from otel_mcp_health.verifiers._registry import make_verifier
from otel_mcp_health.verifiers._templates import Template, Unexpandable, argument

_logger = logging.getLogger(__name__)

#: An HTTP verifier's receipt arrives within its request's timeout plus this margin.
_HTTP_MARGIN_S: Final = 1.0
#: Named parameters of a query (``:order_id``), found outside its quoted literals.
_PARAMETER: Final = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_QUOTED: Final = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")

Build = Callable[[Mapping[str, Any], CallContext], Receipt]
Expand = Callable[[Mapping[str, Any]], Any]


class Templated:
    """A built-in verifier whose values are templates over the call's arguments.

    Expands every template (and checks every argument ``needs`` names), then runs ``build``; a
    call whose arguments cannot fill them gives the receipt :class:`Unexpandable` says:
    ``inconclusive`` for a missing or non-scalar argument, ``failed`` for one that tries to leave
    the policy's scope (docs/outcomes.md#arguments-are-data).
    """

    def __init__(
        self,
        method: str,
        expanders: Mapping[str, Expand],
        build: Build,
        *,
        needs: tuple[str, ...] = (),
    ) -> None:
        self.method = method
        self._expanders, self._build, self._needs = expanders, build, needs

    def __call__(self, call: CallContext) -> Receipt:
        try:
            for name in self._needs:
                argument(call.arguments, name)
            values = {key: expand(call.arguments) for key, expand in self._expanders.items()}
        except Unexpandable as exc:
            return Receipt(exc.result, self.method, None, exc.reason)
        return self._build(values, call)


def file_verifier(
    path: Template, sha256: Template | None, timeout: float, max_bytes: int = MAX_DIGEST_BYTES
) -> Verifier:
    """``verify = "file"``: :func:`file_digest` on the expanded path (and digest), confined to
    the path template's base directory, reading at most ``max_bytes``."""
    expanders: dict[str, Expand] = {"path": path.expand_path}
    if sha256 is not None:
        expanders["sha256"] = sha256.expand

    def build(values: Mapping[str, Any], call: CallContext) -> Receipt:
        verifier = file_digest(
            path=values["path"], expected_sha256=values.get("sha256"), max_bytes=max_bytes
        )
        return verifier(call)

    return make_verifier(Templated(file_digest.method, expanders, build), timeout=timeout)


def http_verifier(
    url: Template, status: int, timeout: float, *, follow_redirects: bool = False
) -> Verifier:
    """``verify = "http"``: :func:`http_status` on the expanded URL (its origin is literal)."""

    def build(values: Mapping[str, Any], call: CallContext) -> Receipt:
        verifier = http_status(
            url=values["url"], expected=status, timeout=timeout, follow_redirects=follow_redirects
        )
        return verifier(call)

    fn = Templated(http_status.method, {"url": url.expand_url}, build)
    return make_verifier(fn, timeout=timeout + _HTTP_MARGIN_S)


def query_parameters(query: str) -> tuple[str, ...]:
    """The named parameters (``:name``) of an SQL query, each once, in order."""
    return tuple(dict.fromkeys(_PARAMETER.findall(_QUOTED.sub("''", query))))


def sqlite_verifier(database: Template, query: str, timeout: float) -> Verifier:
    """``verify = "sqlite"``: :func:`sqlite_row`, read-only, parameters from the arguments."""
    names = query_parameters(query)

    def build(values: Mapping[str, Any], call: CallContext) -> Receipt:
        path: Path = values["database"]
        if not is_file(path):
            reason = ReceiptReason.DATABASE_UNAVAILABLE
            return Receipt(OutcomeResult.INCONCLUSIVE, sqlite_row.method, None, reason)
        uri = path.resolve().as_uri() + "?mode=ro"  # a verifier never writes, nor creates a file
        row = sqlite_row(
            connect=lambda: sqlite3.connect(uri, uri=True, timeout=timeout),
            query=query,
            params={name: call.arguments[name] for name in names},
        )
        return row(call)

    fn = Templated(sqlite_row.method, {"database": database.expand_path}, build, needs=names)
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
            return Receipt(OutcomeResult.INCONCLUSIVE, self.method, None, ReceiptReason.UNAVAILABLE)
        return fn(call)


def load_reference(reference: str) -> Callable[[], object]:
    """A loader of ``package.module:function`` (the attribute may be dotted).

    A module that is the running script (``agent:verify`` under ``python agent.py`` or
    ``python -m agent``) is the running ``__main__`` module, never imported a second time: a
    second import would run the script's top level again, on whatever thread imports it.
    """
    module_name, _, attribute = reference.partition(":")

    def load() -> object:
        found: object = _module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
        return found

    return load


def _module(name: str) -> ModuleType:
    """The module ``name``: the running script's own module when ``name`` names the script."""
    main = sys.modules.get("__main__")
    if main is not None and (name == "__main__" or _is_script(name, main)):
        return main
    return importlib.import_module(name)


def _is_script(name: str, main: ModuleType) -> bool:
    """Whether importing ``name`` would load the running script's file again: by its module
    name (``python -m NAME``), or by its file (``python agent.py``, or ``python -m pkg.agent``
    while ``agent`` is importable from the same file too)."""
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name == name:
        return True
    if name in sys.modules:  # imported as itself already: importing it costs nothing
        return False
    script = getattr(main, "__file__", None) or (sys.argv[0] if sys.argv else "")
    if not script or script.startswith("-"):
        return False
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    origin = found.origin if found is not None else None
    return origin is not None and Path(origin).resolve() == Path(script).resolve()


def imported_verifier(
    load: Callable[[], object], method: str, where: str, timeout: float
) -> Verifier:
    """``verify = "python"`` or ``"entry_point"``: the referenced function of the call."""
    return make_verifier(Imported(load, method, where), timeout=timeout, method=method)
