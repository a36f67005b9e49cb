"""The reference server over streamable HTTP, as its own process (``python reference_http.py``).

Prints its base URL (``http://127.0.0.1:<port>``) on the first line of stdout, then serves until
it is terminated. Run by the project's own interpreter, whatever SDK the client cell has.
"""

from __future__ import annotations

import anyio
from mcp_health_servers import build_server, serve_http


async def main() -> None:
    async with serve_http(build_server()) as url:
        print(url, flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main)
