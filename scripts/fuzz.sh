#!/usr/bin/env bash
# fuzz.sh runs every fuzz target in the module for the given time each
# (default 60s): `make fuzz`. Targets are found by their names, so a new
# FuzzXxx is fuzzed without touching this script.
set -euo pipefail
cd "$(dirname "$0")/.."
time=${1:-60s}
status=0
while IFS=: read -r file _ line; do
	name=$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' <<<"$line")
	[ -n "$name" ] || continue
	pkg=./$(dirname "$file")
	echo "fuzz: $pkg $name for $time"
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$time" "$pkg"; then
		status=1
	fi
done < <(grep -rn --include='*_test.go' '^func Fuzz' internal workflows activities 2>/dev/null | sort)
exit $status
