"""An agent whose outcome policy names a verifier in the agent's own file (issue 26).

Run by ``test_main_module.py`` as a script, ``python tests/outcomes/self_verifying_agent.py MODE``
(MODE ``zero_code`` under ``opentelemetry-instrument``, which loads the policy at start-up, or
``in_code``, which instruments after the script's top level ran), with
``OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES`` naming a policy whose entry is
``callable = "self_verifying_agent:verify"``. The verifier must be this running module's
``verify``: the script's top level runs once (``TOP-LEVEL`` is printed once), and the calls the
verifier saw are the ones this module recorded.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import anyio
from mcp import Client
from opentelemetry.sdk.trace import TracerProvider
from tests.verifiers.delivery_server import TOOL, build_server

import otel_mcp_health as omh

print("TOP-LEVEL", flush=True)
#: The threads the verifier ran on, in this module (a second copy would have its own list).
SEEN: list[str] = []


def verify(call: Any) -> bool:
    SEEN.append(threading.current_thread().name)
    return True


async def main(mode: str) -> None:
    if mode == "in_code":  # the policy loads now, after the top level ran
        omh.McpHealthInstrumentor().instrument(tracer_provider=TracerProvider())
    async with Client(build_server()) as client:
        await client.list_tools()
        await client.call_tool(TOOL, {})
    flushed = await anyio.to_thread.run_sync(omh.flush_receipts, 10.0)
    print(f"FLUSHED {flushed}", flush=True)
    print(f"SEEN {SEEN}", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
