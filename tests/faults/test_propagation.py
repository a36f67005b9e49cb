"""The one thing a server sees: the W3C ``traceparent`` in ``params._meta`` (SECURITY.md).

While our CLIENT span is current, the mcp SDK injects the span's ``traceparent`` into every
request's ``params._meta`` (standard propagation, SEP-414). It reaches the server's handlers and,
relayed by the server, the host's elicitation callback: even though the host never set a global
tracer provider (only ours has one). Without our instrumentation there is no valid span to inject,
and ``OTEL_PROPAGATORS=none`` turns propagation off. Each host runs in its own interpreter
(propagators are read from the environment at import) against a real stdio server that echoes
the ``_meta`` it received.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

HOST = Path(__file__).with_name("propagation_host.py")
CASES = {
    "instrumented": ("instrumented", None),
    "instrumented_propagators_none": ("instrumented", "none"),
    "plain": ("plain", None),
}


def _run(mode: str, propagators: str | None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    if propagators is not None:
        env["OTEL_PROPAGATORS"] = propagators
    done = subprocess.run(
        [sys.executable, str(HOST), mode],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def seen() -> dict[str, dict[str, Any]]:
    with ThreadPoolExecutor(len(CASES)) as pool:
        futures = {case: pool.submit(_run, *args) for case, args in CASES.items()}
        return {case: future.result() for case, future in futures.items()}


def _trace_id(meta: dict[str, Any]) -> str:
    version, trace_id, span_id, flags = meta["traceparent"].split("-")
    assert (version, len(span_id), len(flags)) == ("00", 16, 2)
    return trace_id


def test_our_span_is_propagated_to_the_server_and_back(seen: dict[str, dict[str, Any]]) -> None:
    got = seen["instrumented"]
    assert _trace_id(got["server"]) == got["traces"]["tools/call echo_meta"]
    assert _trace_id(got["server_ask"]) == got["traces"]["tools/call ask"]
    [elicitation] = got["elicitation"]
    assert _trace_id(elicitation) == got["traces"]["tools/call ask"]
    assert set(got["server"]) == {"traceparent"}  # nothing else of ours travels


def test_otel_propagators_none_turns_it_off(seen: dict[str, dict[str, Any]]) -> None:
    got = seen["instrumented_propagators_none"]
    assert got["traces"]["tools/call echo_meta"]  # still instrumented and exported
    assert (got["server"], got["server_ask"], got["elicitation"]) == ({}, {}, [{}])


def test_without_instrumentation_nothing_is_injected(seen: dict[str, dict[str, Any]]) -> None:
    got = seen["plain"]
    assert (got["server"], got["server_ask"], got["elicitation"], got["traces"]) == (
        {},
        {},
        [{}],
        {},
    )
