"""One probe: the check's driver against one configured target, judged by the product's processor.

The probe *acts* like ``otel-mcp-health check`` (handshake in the configured era, a complete
discovery with the check's own cursor-chain logic, the optional canary call) and reads every
verdict back from the judged spans with the check's own report builder: a probe's verdicts are the
agent side's. It adds what a prober needs: the SSE transport, credentials resolved from their
references at probe time, per-phase durations, and a count of the JSON-RPC messages sent.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Self

from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client
from opentelemetry.sdk.trace import ReadableSpan

from otel_mcp_health import attributes as A
from otel_mcp_health._files import FileRefusedError, read_regular_file
from otel_mcp_health.clientside import driver, span_report
from otel_mcp_health.clientside.command_line import ERA_MODES, CheckOptions
from otel_mcp_health.core.vocabulary import GREEN, NextAction, Verdict
from otel_mcp_health.probe._config import Module, ProbeTarget, Secret

#: Reason of a probe that sent nothing because a credential reference could not be read.
CREDENTIAL_UNAVAILABLE = "credential_unavailable"


class CredentialUnavailable(Exception):  # noqa: N818 - a reason, not an error of ours
    """A referenced credential could not be read (the reference is not named: it may be private)."""


@dataclass
class Run:
    """What one probe did, beside its spans: the check's facts, phases and messages sent."""

    facts: driver.Facts = field(default_factory=driver.Facts)
    phases: dict[str, float] = field(default_factory=dict)
    requests: Counter[str] = field(default_factory=Counter)
    #: The era the server answered in (``initialize`` or ``server/discover``), if it answered.
    era: str | None = None
    credential_missing: bool = False


#: Longest credential file read (a secret, not a data file: /dev/zero must not fill memory).
MAX_CREDENTIAL_BYTES = 16 * 1024
#: A value HTTP can carry in a header: visible ASCII, inner spaces and tabs only.
_HEADER_VALUE = re.compile(r"[\x21-\x7e]([ \t]*[\x21-\x7e])*")


def _read_file(path: str) -> str | None:
    """A credential file's text: a regular file of at most :data:`MAX_CREDENTIAL_BYTES`, read
    without blocking (a FIFO or a device could outlast every bound); ``None`` otherwise."""
    try:
        data = read_regular_file(path, MAX_CREDENTIAL_BYTES)
        return data.decode("utf-8").rstrip("\r\n")
    except (OSError, FileRefusedError, UnicodeDecodeError):
        return None


def resolve(secret: Secret, *, header: bool = True) -> str:
    """The credential a reference names, read now (raises :class:`CredentialUnavailable`,
    also for a value a header cannot carry: that is the credential's fault, not the server's)."""
    value = os.environ.get(secret.env) if secret.env is not None else _read_file(str(secret.file))
    if not value or "\n" in value or "\r" in value or "\x00" in value:
        raise CredentialUnavailable
    value = secret.prefix + value
    if header and not _HEADER_VALUE.fullmatch(value):
        raise CredentialUnavailable
    return value


class _CountingWrite:
    """The transport's write stream, counting the JSON-RPC requests and notifications sent.

    Every other attribute is the wrapped stream's, ``_inner`` included: the instrumentation finds
    a session's transport through its stream's ``_inner`` (an SSE session's connecting GET), so
    this wrapper must not hide it behind a name of its own."""

    def __init__(self, inner: Any, counts: Counter[str]) -> None:
        self._counted, self._counts = inner, counts

    async def send(self, item: Any, /) -> None:
        method = getattr(getattr(item, "message", None), "method", None)
        if isinstance(method, str):
            self._counts[method] += 1
        await self._counted.send(item)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._counted, name)

    async def __aenter__(self) -> Self:
        await self._counted.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> Any:
        return await self._counted.__aexit__(*exc)


@asynccontextmanager
async def _counted(transport: Any, counts: Counter[str]) -> AsyncIterator[tuple[Any, Any]]:
    async with transport as (read, write):
        yield read, _CountingWrite(write, counts)


def _transport(target: ProbeTarget, stack: AsyncExitStack) -> Any:
    if target.transport == "stdio":
        # The SDK's safe subset (HOME, PATH, ...) and the target's own references only: the
        # prober's environment holds every other target's credentials.
        env = get_default_environment()
        env.update({name: resolve(secret, header=False) for name, secret in target.env.items()})
        command, *args = target.command
        params = StdioServerParameters(command=command, args=args, env=env)
        return stdio_client(params, errlog=sys.stderr)
    headers = {name: resolve(secret) for name, secret in target.headers.items()}
    url = str(target.url)
    if target.transport == "sse":
        return sse_client(url, headers=headers)
    return driver.streamable_http(url, headers, stack)


def _timed(run: Run, phase: str) -> Callable[[], None]:
    started = time.monotonic()

    def done() -> None:
        run.phases[phase] = time.monotonic() - started

    return done


async def _steps(target: ProbeTarget, options: CheckOptions, mode: str, run: Run) -> None:
    deadline = time.monotonic() + options.timeout_s
    async with AsyncExitStack() as stack:
        try:
            transport = _transport(target, stack)
        except CredentialUnavailable:
            run.credential_missing = True
            return
        client = Client(
            _counted(transport, run.requests), mode=mode, message_handler=None, cache=None
        )
        done = _timed(run, "handshake")
        try:
            await stack.enter_async_context(client)
        finally:
            done()
        run.facts.connected = True
        run.era = "server/discover" if client.protocol_version >= "2026" else "initialize"
        done = _timed(run, "discovery")
        try:
            await driver.discover(client, options, run.facts)
        finally:
            done()
        if options.call is not None:
            done = _timed(run, "call")
            try:
                await driver.call(client, options, deadline, run.facts)
            finally:
                done()


def check_options(target: ProbeTarget, module: Module, timeout_s: float) -> CheckOptions:
    """The check's view of one probe: where, what to call, and the bounds."""
    canary = target.canary if module.call else None
    return CheckOptions(
        url=target.url,
        command=target.command,
        era=module.era,  # type: ignore[arg-type]
        call=canary.tool if canary is not None else None,
        arguments=dict(canary.arguments) if canary is not None else {},
        timeout_s=timeout_s,
        max_pages=module.max_pages,
    )


def drive(
    target: ProbeTarget, options: CheckOptions, era_mode: str | None, *, run: Run | None = None
) -> Run:
    """Run one probe in this thread's own event loop; never raises for what the server does.

    ``era_mode`` is the ``Client`` mode learned from an earlier probe of this target (``None``:
    the module's era).
    """
    run = run if run is not None else Run()
    mode = era_mode or ERA_MODES[options.era]
    driver.run_bounded(options.timeout_s, lambda: _steps(target, options, mode, run), run.facts)
    return run


def _connect_verdict(spans: Sequence[ReadableSpan]) -> dict[str, Any] | None:
    """The verdict of the last judged ``mcp_health.connect`` span, in the report's words."""
    judged = [
        s.attributes or {}
        for s in spans
        if s.name == A.CONNECT_SPAN_NAME and A.VERDICT in (s.attributes or {})
    ]
    if not judged:
        return None
    return span_report.failure(judged[-1], NextAction.NONE.value)


def report(spans: Sequence[ReadableSpan], run: Run, options: CheckOptions) -> dict[str, Any]:
    """The check's report of this probe's spans, with the session's own verdict beside the
    top-level one, whether it is a success, and the catalog's approval (a missing credential:
    ``unverified``, nothing sent)."""
    built = span_report.build(spans, run.facts, options)
    if run.credential_missing:
        built.update(
            verdict=Verdict.UNVERIFIED.value,
            reason=CREDENTIAL_UNAVAILABLE,
            nextAction=NextAction.NONE.value,
        )
    session = built["session"]
    connect = _connect_verdict(spans)
    if "verdict" not in session and connect is not None:
        # An SSE connection refused before any handshake: judged like a handshake, on its own
        # span (``mcp_health.connect``), which the check (no SSE) does not read.
        session.update(connect)
        if "call" not in built:
            built.update(
                verdict=connect["verdict"],
                reason=connect["reason"],
                nextAction=connect["nextAction"],
            )
    verdict, reason, _action = span_report.session_verdict(spans, session, run.facts)
    if run.credential_missing:
        verdict, reason = Verdict.UNVERIFIED.value, CREDENTIAL_UNAVAILABLE
    built["sessionVerdict"] = (verdict, reason)
    built["success"] = built["verdict"] in GREEN
    built["approval"] = built["catalog"].get("approval")
    return built
