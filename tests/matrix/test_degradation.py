"""Loud, safe degradation: an SDK release without one of the private hooks the line relies on.

Each private hook of the installed line's table is taken away in turn (the instrumentation finds
it missing, as after an SDK rename). Then: ``instrument()`` raises nothing, one warning names the
SDK version and the evidence that will be missing, the application sees what it sees without
instrumentation, and a call that would be ``healthy`` is ``unverified`` with reason
``evidence_missing`` -- never green -- with the missing evidence named on its span. A private
hook point that is still there but of another shape (its parameters changed) is handled the same
way: it is not wrapped at all.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

import anyio
import pytest
from tests.support.matrix_drivers import Events, connect
from tests.support.processor_helpers import Pipeline

from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import McpHealthInstrumentor, _compat, flush_receipts
from otel_mcp_health.instrumentation._sdk import EVIDENCE, HTTP_ONLY_EVIDENCE

pytestmark = pytest.mark.anyio

PRIVATE = [hook for hook in _compat.hooks() if hook.evidence is not None]


def _transport(evidence: str) -> str:
    return "http" if evidence in HTTP_ONLY_EVIDENCE else "stdio"


@pytest.fixture
def verified_create_ticket() -> Iterator[None]:
    from otel_mcp_health.verifiers import clear_verifiers, register_verifier

    clear_verifiers()
    register_verifier("create_ticket", lambda call: True, method="destination_query")
    yield
    clear_verifiers()


async def _agent(transport: str, url: str) -> list[Any]:
    seen: list[Any] = []
    with anyio.fail_after(60):
        async with connect("session", transport, url, Events()) as agent:
            await agent.list_all()
            result = await agent.call("create_ticket", {"title": "t", "priority": "p"})
            seen.append(result.model_dump(mode="json"))
            assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    return seen


def _instrumented(pipeline: Pipeline) -> McpHealthInstrumentor:
    instrumentor = McpHealthInstrumentor()
    instrumentor.instrument(tracer_provider=pipeline.provider, meter_provider=pipeline.meters)
    return instrumentor


@pytest.mark.usefixtures("verified_create_ticket")
@pytest.mark.parametrize("hook", PRIVATE, ids=lambda h: f"{h.module}.{h.name}")
async def test_a_missing_private_hook_is_loud_and_never_green(
    hook: _compat.Hook,
    reference_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert hook.evidence is not None
    transport, url = _transport(hook.evidence), reference_url + "/mcp"
    baseline = await _agent(transport, url)  # uninstrumented: what the application sees

    resolves = _compat._resolves
    monkeypatch.setattr(
        _compat, "_resolves", lambda m, n: (m, n) != (hook.module, hook.name) and resolves(m, n)
    )
    pipeline = Pipeline.build()
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        instrumentor = _instrumented(pipeline)
    try:
        assert await _agent(transport, url) == baseline
    finally:
        instrumentor.uninstrument()

    (warning,) = [r for r in caplog.records if r.name.startswith("otel_mcp_health")]
    message = warning.getMessage()
    assert f"mcp {version('mcp')}" in message
    assert f"{hook.module}.{hook.name}" in message
    assert EVIDENCE[hook.evidence] in message
    call = pipeline.last("tools/call create_ticket")
    attrs = dict(call.attributes or {})
    assert hook.evidence in attrs[A.EVIDENCE_MISSING]
    assert (attrs[A.VERDICT], attrs[A.REASON]) == ("unverified", "evidence_missing")


@pytest.mark.usefixtures("verified_create_ticket")
async def test_with_every_hook_the_same_call_is_healthy(reference_url: str) -> None:
    """The control: the verdicts above come from the missing hook, not from the scenario."""
    for transport in ("stdio", "http"):
        pipeline = Pipeline.build()
        instrumentor = _instrumented(pipeline)
        try:
            await _agent(transport, reference_url + "/mcp")
        finally:
            instrumentor.uninstrument()
        attrs = dict(pipeline.last("tools/call create_ticket").attributes or {})
        assert A.EVIDENCE_MISSING not in attrs
        assert (attrs[A.VERDICT], attrs[A.REASON]) == ("healthy", "ok")


async def test_a_missing_public_hook_installs_nothing_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    public = next(hook for hook in _compat.hooks() if hook.evidence is None)
    resolves = _compat._resolves
    monkeypatch.setattr(
        _compat, "_resolves", lambda m, n: (m, n) != (public.module, public.name) and resolves(m, n)
    )
    with caplog.at_level(logging.ERROR, logger="otel_mcp_health"):
        instrumentor = _instrumented(Pipeline.build())
    try:
        assert _compat.wrapped() == ()
    finally:
        instrumentor.uninstrument()
    (error,) = [r for r in caplog.records if r.name.startswith("otel_mcp_health")]
    assert f"{public.module}.{public.name}" in error.getMessage()


#: Private hook points whose wrapper reads the SDK's arguments by position (checked by shape).
SHAPED = [hook for hook in PRIVATE if hook.reads and hook.wrapper is not None]


def _plant_other_shape(hook: _compat.Hook, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Replace the hook point with a working function of another signature (``*args``): what a
    minor SDK release could do. Returns the planted function."""
    owner: Any = importlib.import_module(hook.module)
    *path, attribute = hook.name.split(".")
    for part in path:
        owner = getattr(owner, part)
    original = getattr(owner, attribute)
    if inspect.iscoroutinefunction(original):

        async def planted(*args: Any, **kwargs: Any) -> Any:
            return await original(*args, **kwargs)
    else:

        def planted(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            return original(*args, **kwargs)

    monkeypatch.setattr(owner, attribute, planted)
    return planted


@pytest.mark.usefixtures("verified_create_ticket")
@pytest.mark.parametrize("hook", SHAPED, ids=lambda h: f"{h.module}.{h.name}")
async def test_a_private_hook_of_another_shape_is_not_wrapped(
    hook: _compat.Hook,
    reference_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Like a framework hook point of another shape: one warning, nothing of that hook wrapped,
    its evidence missing, and the application's calls through it work as before."""
    assert hook.evidence is not None
    transport, url = _transport(hook.evidence), reference_url + "/mcp"
    planted = _plant_other_shape(hook, monkeypatch)
    baseline = await _agent(transport, url)  # uninstrumented, over the planted function
    pipeline = Pipeline.build()
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        instrumentor = _instrumented(pipeline)
    try:
        assert hook not in _compat.wrapped()
        owner: Any = importlib.import_module(hook.module)
        for part in hook.name.split("."):
            owner = getattr(owner, part)
        assert owner is planted, "the hook point was wrapped"
        assert await _agent(transport, url) == baseline
    finally:
        instrumentor.uninstrument()

    (warning,) = [r for r in caplog.records if r.name.startswith("otel_mcp_health")]
    message = warning.getMessage()
    assert f"{hook.module}.{hook.name} of the expected shape" in message
    assert EVIDENCE[hook.evidence] in message
    attrs = dict(pipeline.last("tools/call create_ticket").attributes or {})
    assert hook.evidence in attrs[A.EVIDENCE_MISSING]
    assert (attrs[A.VERDICT], attrs[A.REASON]) == ("unverified", "evidence_missing")
