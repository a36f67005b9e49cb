"""The integration suite's server as a stdio subprocess (``python stdio_server.py``).

Run by path, it imports the server module beside it (a script's own directory is on
``sys.path``)."""

from __future__ import annotations

import anyio
from mcp.server.stdio import stdio_server
from mcp_health_servers import build_server


async def main() -> None:
    server = build_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
