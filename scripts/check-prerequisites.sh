#!/usr/bin/env bash
# What `make test` needs before it starts, checked first so that a missing piece is one clear line
# now instead of a failure deep into the run (README.md#development). Exit 0: everything is there;
# exit 1: the first missing prerequisite, said in one line on stderr.
#   PYTHON      the interpreter make uses (default python3): 3.11 or newer, with venv
#   go          builds the bundled collector (scripts/provision-pipeline.sh); on PATH or in
#               GO_FALLBACK (default /usr/local/go/bin)
#   root        (or sudo) when apt-get must install Prometheus, Alertmanager, node or npm
#   disk        about 8 GB free on a fresh machine (venvs, Go caches, the collector), 1 GB after
set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
missing() {
  echo "make test: $*" >&2
  exit 1
}

command -v "$PYTHON" >/dev/null || missing "no '$PYTHON' on PATH: install Python 3.11 or newer"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
  missing "$PYTHON is $("$PYTHON" -c 'import sys; print(sys.version.split()[0])'): Python 3.11 or newer is needed"
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null ||
  missing "$PYTHON has no venv/ensurepip: install python3-venv (apt-get install python3-venv)"

# Where Go's own tarball installs it: provision-pipeline.sh looks there too.
GO_FALLBACK=${GO_FALLBACK:-/usr/local/go/bin}
command -v go >/dev/null || [ -x "$GO_FALLBACK/go" ] ||
  missing "Go is missing: install it (https://go.dev/dl/) and put it on PATH; it builds the bundled collector"

can_install() { [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null; }
# The same tools provision-pipeline.sh looks for before it calls apt-get.
for tool in prometheus promtool prometheus-alertmanager amtool node npm; do
  if ! command -v "$tool" >/dev/null; then
    command -v apt-get >/dev/null ||
      missing "$tool is missing and there is no apt-get to install it: install Prometheus, Alertmanager, node and npm"
    can_install ||
      missing "$tool is missing and installing it with apt-get needs root: run make test as root (or with sudo)"
  fi
done

[ -d "${HOME:-}" ] ||
  missing "HOME (${HOME:-unset}) is not a directory: the venvs, pip, npm and Go keep their caches there"
cache=${XDG_CACHE_HOME:-$HOME/.cache}
need_gb=1
[ -d "$cache/otel-mcp-health-nox" ] || need_gb=8 # a fresh machine: every venv and the Go caches
free_kb=$(df -Pk "$HOME" | awk 'NR == 2 { print $4 }')
[ "${free_kb:-0}" -ge $((need_gb * 1024 * 1024)) ] ||
  missing "only $((free_kb / 1024 / 1024)) GB free in $HOME: about $need_gb GB are needed (venvs, Go caches, the collector)"
exit 0
