#!/usr/bin/env bash
# Installs the third-party MCP servers that tests/check drives. Idempotent: a second run that
# finds everything in place changes nothing. Needs node + npm (apt-get installs them when run as
# root on a fresh Debian/Ubuntu machine) and the project's .venv (make setup).
set -euo pipefail
cd "$(dirname "$0")/.."

SERVERS=tests/check/servers
PYTHON=${PYTHON:-.venv/bin/python}

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "provision-check: node and npm are needed (e.g. apt-get install nodejs npm)" >&2
    exit 1
  fi
fi

# The TypeScript SDK's reference server, pinned by package-lock.json.
marker="$SERVERS/node_modules/.package-lock.json"
if [ ! -f "$marker" ] || [ "$SERVERS/package-lock.json" -nt "$marker" ]; then
  npm ci --prefix "$SERVERS" --no-audit --no-fund --loglevel=error
fi

# mcp-server-time from PyPI (the test extra pins it; this covers a .venv made before it was added).
if ! "$PYTHON" -c "import mcp_server_time" 2>/dev/null; then
  "$PYTHON" -m pip install --quiet -e '.[test]'
fi
echo "provision-check: server-everything and mcp-server-time are installed"
