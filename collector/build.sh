#!/usr/bin/env bash
# Build the bundled collector with the OpenTelemetry Collector Builder (OCB), cached.
# Prints the binary's path on stdout (logs go to stderr). The cache key is the sha256 of the
# manifest, the builder version and the Go toolchain, so a second run is a lookup. Concurrent
# runs serialise on a lock and the binary appears by atomic rename, never half-written.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
manifest=$here/builder-config.yaml
builder=${OCB_BUILDER:-$(command -v builder || echo "$HOME/go/bin/builder")}
[ -x "$builder" ] || { echo "build.sh: OCB builder not found at $builder (run scripts/provision-pipeline.sh)" >&2; exit 2; }
name=otelcol-mcp-health

key=$( { cat "$manifest"; "$builder" version 2>&1; go env GOVERSION GOOS GOARCH; } | sha256sum | cut -c1-16)
cache=${OTELCOL_OCB_CACHE:-$HOME/.cache/otelcol-ocb}
dest=$cache/$key/$name
mkdir -p "$cache"

if [ ! -x "$dest" ]; then
  exec 9>"$cache/$key.lock"
  flock 9
  if [ ! -x "$dest" ]; then
    work=$(mktemp -d "$cache/.build-$key.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    cp "$manifest" "$work/builder-config.yaml"
    echo "build.sh: building $name (cache key $key); about 6 min on 2 cores when cold" >&2
    start=$(date +%s)
    (cd "$work" && timeout "${OCB_BUILD_TIMEOUT_S:-1500}" "$builder" --config=builder-config.yaml) >&2
    mkdir -p "$cache/$key"
    mv -f "$work/_build/$name" "$dest.tmp.$$"
    mv -f "$dest.tmp.$$" "$dest"
    echo "build.sh: built in $(( $(date +%s) - start )) s" >&2
  fi
fi
mkdir -p "$here/bin"
ln -sfn "$dest" "$here/bin/$name"
echo "$dest"
