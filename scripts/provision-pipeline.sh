#!/usr/bin/env bash
# Provision what the pipeline tests and `make pipeline` need, idempotently (a second run only
# checks): Prometheus, Alertmanager, valgrind (the cost gate's), Node.js and npm (Debian
# packages, only the missing ones), the OpenTelemetry Collector Builder, the bundled collector
# (collector/build.sh, cached by manifest + builder + Go version) and the dashboard type-check
# tooling (npm ci in dashboards/). Prints the wall time of each stage.
set -euo pipefail
cd "$(dirname "$0")/.."
OCB_VERSION=v0.161.0
# Go from the official tarball lives outside the default PATH of a non-login shell.
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin

stage() { # stage NAME COMMAND...: run one stage and report its wall time
  local name=$1 start ms
  shift
  start=$(date +%s%N)
  "$@"
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  printf '== provision: %-18s %4d.%01d s\n' "$name" $((ms / 1000)) $((ms % 1000 / 100))
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "provision: '$*' needs root" >&2; return 1; fi
}

# Only the packages whose tools are missing. Node.js and npm are installed here, not only by
# provision-check.sh: make test runs this script first and its dashboard stage needs npm.
debian_packages() {
  local packages=()
  { command -v prometheus && command -v promtool; } >/dev/null || packages+=(prometheus)
  { command -v prometheus-alertmanager && command -v amtool; } >/dev/null ||
    packages+=(prometheus-alertmanager)
  { command -v node && command -v npm; } >/dev/null || packages+=(nodejs npm)
  command -v valgrind >/dev/null || packages+=(valgrind)
  [ "${#packages[@]}" -eq 0 ] && return 0
  command -v apt-get >/dev/null || { echo "provision: install ${packages[*]} (no apt-get here)" >&2; return 1; }
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${packages[@]}" >/dev/null
}

ocb_builder() {
  command -v go >/dev/null || { echo "provision: Go is required to build the collector" >&2; return 1; }
  local bin
  bin="$(go env GOPATH)/bin/builder"
  if [ ! -x "$bin" ] || [ "$("$bin" version 2>&1)" != "ocb version ${OCB_VERSION}" ]; then
    go install "go.opentelemetry.io/collector/cmd/builder@${OCB_VERSION}"
  fi
  export OCB_BUILDER=$bin
}

collector_binary() {
  timeout 1500 collector/build.sh >/dev/null
}

dashboards_tooling() {
  command -v npm >/dev/null || { echo "provision: node and npm are required for the dashboard check" >&2; return 1; }
  local stamp=dashboards/node_modules/.provisioned want
  want=$(sha256sum dashboards/package-lock.json | cut -d' ' -f1)
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && return 0
  (cd dashboards && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$want" >"$stamp"
}

stage "debian packages" debian_packages
stage "collector builder" ocb_builder
stage "collector build" collector_binary
stage "dashboard tooling" dashboards_tooling
