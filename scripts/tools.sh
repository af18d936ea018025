#!/usr/bin/env bash
# tools.sh installs the real programs Tether's tests and `make run` need, each
# pinned and cached by version so that only the first run pays for a build:
#
#   temporal   the Temporal CLI (dev server + client), built with go install
#   versitygw  an S3-compatible server for the blob store's S3 backend
#   clis       the agent CLIs (Claude Code, Codex, pi) from the npm registry
#
# Go binaries are cached under ${TETHER_CACHE:-$XDG_CACHE_HOME/tether}/tools
# and copied into bin/; npm CLIs go into .tools/npm (git-ignored).
# Usage: scripts/tools.sh [temporal|versitygw|clis|all]...
set -euo pipefail

TEMPORAL_VERSION=v1.5.1
VERSITYGW_VERSION=v1.8.0
CLAUDE_CODE_VERSION=2.1.332
CODEX_VERSION=0.171.0
PI_VERSION=0.73.1

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${TETHER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}
mkdir -p "$root/bin"

# go_tool NAME VERSION PACKAGE MINUTES: build PACKAGE@VERSION once into the
# cache, then copy it into bin/.
go_tool() {
	local name=$1 version=$2 pkg=$3 minutes=$4
	local dir="$cache/tools/$name-$version"
	if [ ! -x "$dir/$name" ]; then
		echo "tools: building $name $version with go install (about $minutes minutes cold on 2 cores; cached in $dir afterwards)" >&2
		mkdir -p "$dir.tmp"
		GOBIN="$dir.tmp" GOFLAGS=-buildvcs=false go install "$pkg@$version"
		rm -rf "$dir" && mv "$dir.tmp" "$dir"
	fi
	if ! cmp -s "$dir/$name" "$root/bin/$name" 2>/dev/null; then
		cp "$dir/$name" "$root/bin/$name.tmp" && mv "$root/bin/$name.tmp" "$root/bin/$name"
	fi
	echo "$root/bin/$name"
}

clis() {
	local dir="$root/.tools/npm"
	local want="claude-code@$CLAUDE_CODE_VERSION codex@$CODEX_VERSION pi@$PI_VERSION"
	if [ -f "$dir/.versions" ] && [ "$(cat "$dir/.versions")" = "$want" ]; then
		echo "$dir/node_modules/.bin"
		return
	fi
	echo "tools: installing agent CLIs from the npm registry into $dir ($want)" >&2
	mkdir -p "$dir"
	(cd "$dir" && [ -f package.json ] || echo '{"name":"tether-clis","private":true}' > "$dir/package.json")
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
		"@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" \
		"@openai/codex@$CODEX_VERSION" \
		"@mariozechner/pi-coding-agent@$PI_VERSION" >&2
	echo "$want" > "$dir/.versions"
	echo "$dir/node_modules/.bin"
}

[ $# -gt 0 ] || set -- all
for t in "$@"; do
	case $t in
	temporal) go_tool temporal "$TEMPORAL_VERSION" github.com/temporalio/cli/cmd/temporal 12 ;;
	versitygw) go_tool versitygw "$VERSITYGW_VERSION" github.com/versity/versitygw/cmd/versitygw 5 ;;
	clis) clis ;;
	all)
		go_tool temporal "$TEMPORAL_VERSION" github.com/temporalio/cli/cmd/temporal 12
		go_tool versitygw "$VERSITYGW_VERSION" github.com/versity/versitygw/cmd/versitygw 5
		clis
		;;
	*) echo "tools: unknown tool $t (want temporal, versitygw, clis or all)" >&2; exit 2 ;;
	esac
done
