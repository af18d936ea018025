#!/usr/bin/env bash
# Runs a command while a busy loop spins on every core (cpuhog), then stops
# the loops: `make test-loaded` runs the whole suite this way, so a test
# that waits with a fixed sleep or a tight bound fails here, not in CI.
#   scripts/loaded.sh go test ./...
set -euo pipefail
cd "$(dirname "$0")/.."
hog=$(mktemp -d "${TMPDIR:-/tmp}/tether-cpuhog.XXXXXX")
go build -o "$hog/cpuhog" ./internal/testenv/cmd/cpuhog
# Bounded even if this script is killed before its trap runs.
"$hog/cpuhog" -procs "${HOG_PROCS:-$(nproc)}" -for "${HOG_FOR:-3h}" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$hog"' EXIT
echo "loaded: $(nproc) core(s) busy (cpuhog pid $pid)" >&2
"$@"
