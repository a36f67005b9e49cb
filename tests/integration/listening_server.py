"""``changing_server.py`` that also serves the 2026-07-28 ``subscriptions/listen`` stream.

At that era a server announces a change only on a stream the client opened, so this server (its
own low-level ``Server`` with ``on_subscriptions_listen``) publishes ``ToolsListChanged`` there
whenever ``trigger_change`` runs. ``python listening_server.py stdio|http``, like
``changing_server.py``; run by the project's own interpreter (mcp 2.x) for the strands cells.
Run by path, it imports ``changing_server`` beside it (a script's own directory is on
``sys.path``).
"""

from __future__ import annotations

import sys
from typing import Any

import changing_server as cs
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ToolsListChanged

bus = InMemorySubscriptionBus()


class Listening(cs.Server):
    """``changing_server``'s ``Server``, publishing each ``trigger_change`` on the listen stream."""

    def __init__(self, *args: Any, on_call_tool: Any, **kwargs: Any) -> None:
        async def call(ctx: Any, params: Any) -> Any:
            result = await on_call_tool(ctx, params)
            if params.name == "trigger_change":
                await bus.publish(ToolsListChanged())
            return result

        super().__init__(
            *args, on_call_tool=call, on_subscriptions_listen=ListenHandler(bus), **kwargs
        )


if __name__ == "__main__":
    cs.Server = Listening
    cs.anyio.run(cs._stdio if sys.argv[1:] == ["stdio"] else cs._http)
