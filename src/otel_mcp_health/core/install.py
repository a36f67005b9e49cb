"""An install compared with a discovery, tool by tool (docs/model.md#catalog).

Agents offer their model fewer tools than the server lists (tool filters), so "what the client
exposes differs from the discovery" is judged per tool, on per-tool digests over the v1
projection (:meth:`otel_mcp_health.core.digest.CatalogDigester.tool_digests`): every installed
definition must equal the discovered one of its name, and every installed tool must be listed.
One comparison (:func:`compare_install`) and one reading of it (:func:`install_reason`) serve the
instrumentation (which compares in memory and records only names and counts on the install span),
the processor and ``otel-mcp-health classify`` (``clientTools``) alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from otel_mcp_health.core.digest import tool_digests
from otel_mcp_health.core.evidence import InstallCheck, JsonObject
from otel_mcp_health.core.reasons import Reason


def compare_install(
    installed: Mapping[str, str], discovered: Mapping[str, str], *, discovery_digest: str | None
) -> InstallCheck:
    """The one comparison of an install with a discovery, tool by tool (docs/model.md#catalog):
    ``installed`` and ``discovered`` map each tool name to its per-tool digest
    (:meth:`otel_mcp_health.core.digest.CatalogDigester.tool_digests`); ``discovery_digest`` is
    the catalog digest of that discovery. Names only leave this function, sorted."""
    changed = sorted(n for n, d in installed.items() if n in discovered and discovered[n] != d)
    unlisted = sorted(name for name in installed if name not in discovered)
    return InstallCheck(
        installed=len(installed),
        discovered=len(discovered),
        changed=tuple(changed),
        unlisted=tuple(unlisted),
        discovery_digest=discovery_digest,
    )


def compare_tools(
    installed: Iterable[JsonObject], discovered: Iterable[JsonObject], *, discovery_digest: str
) -> InstallCheck:
    """:func:`compare_install` of tool definitions (raises :class:`DigestError` as a digest)."""
    return compare_install(
        tool_digests(installed), tool_digests(discovered), discovery_digest=discovery_digest
    )


def install_reason(install: InstallCheck, discovered_digest: str | None) -> str | None:
    """Why an install does not match the last complete discovery, or ``None`` when every
    installed definition equals the discovered one of its name (a subset included)."""
    if install.discovery_digest != discovered_digest:
        return Reason.DIGEST_MISMATCH  # compared with another discovery than the last
    if install.earlier_catalog:
        return Reason.EARLIER_CATALOG_OFFERED  # even when every tool is still listed as offered
    if install.installed == 0 and install.discovered > 0:
        return Reason.NOTHING_INSTALLED
    if install.unlisted:
        return Reason.INSTALLED_TOOL_UNLISTED
    if install.changed:
        return Reason.DIGEST_MISMATCH
    return None


__all__ = ["compare_install", "compare_tools", "install_reason"]
