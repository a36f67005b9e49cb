"""The reference server over streamable HTTP, as its own process (``python reference_http.py``).

Prints its base URL (``http://127.0.0.1:<port>``) on the first line of stdout, then serves until
it is terminated. ``python reference_http.py <port>`` serves on that port (a restart of the same
server). Run by the project's own interpreter, whatever SDK the client cell has.
"""

from __future__ import annotations

import sys

import anyio
from mcp_health_servers import build_server, serve_http


async def main() -> None:
    port = int(sys.argv[1]) if sys.argv[1:] else None
    async with serve_http(build_server(), port) as url:
        print(url, flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main)
