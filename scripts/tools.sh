#!/usr/bin/env bash
# tools.sh installs the real programs Tether's tests, `make run` and
# `make cluster` need, each pinned in .env and cached by version so that only
# the first run pays for a build:
#
#   temporal         the Temporal CLI (dev server + client), built from the
#                    module proxy with the SQLite driver .env pins
#   temporal-server  the Temporal server and its SQL schema tool, for the
#                    production topology (scripts/cluster.sh)
#   versitygw        an S3-compatible server for the blob store's S3 backend
#   clis             the agent CLIs (Claude Code, Codex, pi, Gemini CLI,
#                    grok, opencode) from the npm registry
#   sandbox          bubblewrap (bwrap), which confines agents and tools, and
#                    curl, which the sandbox's attack tests use: Debian's,
#                    with apt-get (as root), when they are missing
#   chromium         Debian's chromium, which the console's browser tests
#                    drive: the machine's own, else installed with apt (as
#                    root; not part of "all")
#   kimi             the Kimi CLI (kimi-cli) from the Python registry, into a
#                    virtual environment in .tools/kimi (not part of "all":
#                    see docs/backends.md, it does not install on this machine)
#
# Go binaries are cached under ${TETHER_CACHE:-$XDG_CACHE_HOME/tether}/tools
# and copied into bin/; npm CLIs go into .tools/npm (git-ignored). Two runs
# at once are safe: each builds in its own temporary directory and the
# first to finish renames it into place; installs into one directory are
# serialised by a lock.
# Usage: scripts/tools.sh [temporal|temporal-server|versitygw|clis|sandbox|chromium|kimi|all|versions]...
# ("versions" prints what each tool is built or installed at, one per line.)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../.env
set -a; . "$root/.env"; set +a
cache=${TETHER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}
mkdir -p "$root/bin" "$cache/tools"

# go_tool NAME VERSION MINUTES [--with "module@version ..."] PACKAGE...:
# build the packages at VERSION once into the cache directory NAME-VERSION
# (whose first binary is NAME), then copy every binary into bin/. --with
# builds them in a module of their own that requires those versions too
# (each at least as new as the tool's go.mod names), and names the cache
# directory after them.
go_tool() {
	local name=$1 version=$2 minutes=$3 with=""
	shift 3
	if [ "${1:-}" = --with ]; then
		with=$2
		shift 2
	fi
	local dir="$cache/tools/$name-$version${with:++$(tr ' /@' '+_-' <<<"$with")}"
	if [ ! -x "$dir/$name" ]; then
		echo "tools: building $name $version${with:+ with $with} (about $minutes minutes cold on 2 cores; cached in $dir afterwards)" >&2
		local tmp
		tmp=$(mktemp -d "$cache/tools/.$name-$version.XXXXXX")
		local pkgs=() paths=("$@")
		for p in "$@"; do pkgs+=("$p@$version"); done
		local ok=1
		if [ -z "$with" ]; then
			GOBIN="$tmp" GOFLAGS=-buildvcs=false go install "${pkgs[@]}" || ok=0
		else
			local mod
			mod=$(mktemp -d "$cache/tools/.$name-mod.XXXXXX")
			# go get names every module it adds: kept for a failure only.
			# shellcheck disable=SC2086 # one word a module
			(cd "$mod" && go mod init tether-tools &&
				GOFLAGS=-buildvcs=false go get "${pkgs[@]}" $with &&
				GOFLAGS=-buildvcs=false go build -o "$tmp/" "${paths[@]}") >"$mod.log" 2>&1 || { ok=0; cat "$mod.log" >&2; }
			rm -rf "$mod" "$mod.log"
		fi
		if [ $ok = 0 ]; then
			rm -rf "$tmp"
			exit 1
		fi
		# The binary go install names after its package directory becomes
		# NAME; the others keep their names.
		[ -x "$tmp/$name" ] || mv "$tmp/$(basename "$1")" "$tmp/$name"
		chmod 755 "$tmp"
		# Another run may have finished first: keep its copy.
		mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
	fi
	local f
	for f in "$dir"/*; do
		local b
		b=$(basename "$f")
		[ "$b" = "$name" ] || b="$name-$b"
		if ! cmp -s "$f" "$root/bin/$b" 2>/dev/null; then
			local t
			t=$(mktemp "$root/bin/.$b.XXXXXX")
			cp "$f" "$t" && chmod 755 "$t" && mv "$t" "$root/bin/$b"
		fi
	done
	echo "$root/bin/$name"
}

# agent_clis prints the npm package@version of every AGENT_CLI_<X> line of
# .env, one a line, in order: each backend's pin (agent.Facts.Pin).
agent_clis() { sed -n 's/^AGENT_CLI_[A-Z0-9_]*=//p' "$root/.env"; }

clis() {
	local dir="$root/.tools/npm"
	# The stamp names each CLI by its line (AGENT_CLI_GEMINI_CLI: gemini-cli)
	# and version: claude-code@2.1.332 codex@0.171.0 ...
	local want
	want=$(sed -n 's/^AGENT_CLI_\([A-Z0-9_]*\)=.*@\([^@]*\)$/\1@\2/p' "$root/.env" | tr 'A-Z_' 'a-z-' | tr '\n' ' ')
	want=${want% }
	mkdir -p "$dir"
	(
		flock 9
		if [ -f "$dir/.versions" ] && [ "$(cat "$dir/.versions")" = "$want" ]; then
			exit 0
		fi
		echo "tools: installing agent CLIs from the npm registry into $dir ($want)" >&2
		[ -f "$dir/package.json" ] || echo '{"name":"tether-clis","private":true}' >"$dir/package.json"
		# shellcheck disable=SC2046 # one word a package
		npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $(agent_clis) >&2
		echo "$want" >"$dir/.versions"
	) 9>"$dir/.lock"
	echo "$dir/node_modules/.bin"
}

kimi() {
	local dir="$root/.tools/kimi"
	mkdir -p "$root/.tools"
	(
		flock 9
		if [ -x "$dir/bin/kimi" ] && [ "$(cat "$dir/.version" 2>/dev/null)" = "$KIMI_CLI_VERSION" ]; then
			exit 0
		fi
		echo "tools: installing kimi-cli $KIMI_CLI_VERSION from the Python registry into $dir" >&2
		rm -rf "$dir"
		python3 -m venv "$dir" >&2
		if ! "$dir/bin/pip" install --disable-pip-version-check --no-input "kimi-cli==$KIMI_CLI_VERSION" >&2; then
			rm -rf "$dir"
			exit 1
		fi
		echo "$KIMI_CLI_VERSION" >"$dir/.version"
	) 9>"$root/.tools/.kimi.lock"
	echo "$dir/bin"
}

# sandbox installs bubblewrap and curl from Debian's archive, like the
# cluster's PostgreSQL, when they are missing; it prints bwrap's path.
sandbox() {
	local missing=()
	command -v bwrap >/dev/null || missing+=(bubblewrap)
	command -v curl >/dev/null || missing+=(curl)
	if [ ${#missing[@]} -gt 0 ]; then
		if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
			echo "tools: install ${missing[*]} (Debian: apt-get install ${missing[*]}); the sandbox needs bubblewrap" >&2
			exit 1
		fi
		echo "tools: installing ${missing[*]} with apt-get" >&2
		apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
	fi
	command -v bwrap
}

# chromium prints the browser's path, installing Debian's package first
# when the machine has none (the way .ci/run installs PostgreSQL).
chromium() {
	local b
	# type -P: a program on PATH. command -v would name this very function,
	# and so never install the browser.
	b=$(type -P chromium || type -P chromium-browser || true)
	if [ -z "$b" ]; then
		[ "$(id -u)" = 0 ] || { echo "tools: chromium is not installed; install it with: sudo apt-get install chromium" >&2; exit 1; }
		echo "tools: installing chromium with apt" >&2
		apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >&2
		b=$(type -P chromium)
	fi
	echo "$b"
}

temporal() { go_tool temporal "v$TEMPORAL_CLI_VERSION" 12 --with "modernc.org/sqlite@v$TEMPORAL_CLI_SQLITE_VERSION" github.com/temporalio/cli/cmd/temporal; }
temporal_server() {
	go_tool temporal-server "v$TEMPORAL_VERSION" 12 go.temporal.io/server/cmd/server go.temporal.io/server/cmd/tools/sql
}
versitygw() { go_tool versitygw "v$VERSITYGW_VERSION" 5 github.com/versity/versitygw/cmd/versitygw; }

[ $# -gt 0 ] || set -- all
for t in "$@"; do
	case $t in
	temporal) temporal ;;
	temporal-server) temporal_server ;;
	versitygw) versitygw ;;
	clis) clis ;;
	chromium) chromium ;;
	kimi) kimi ;;
	sandbox) sandbox ;;
	all) temporal && temporal_server && versitygw && clis && sandbox ;;
	versions)
		printf '%s %s\n' temporal "v$TEMPORAL_CLI_VERSION (modernc.org/sqlite v$TEMPORAL_CLI_SQLITE_VERSION)" temporal-server "v$TEMPORAL_VERSION" versitygw "v$VERSITYGW_VERSION"
		agent_clis | sed 's/^\(.*\)@\([^@]*\)$/\1 \2/'
		printf '%s %s\n' kimi-cli "$KIMI_CLI_VERSION"
		;;
	*) echo "tools: unknown tool $t (want temporal, temporal-server, versitygw, clis, sandbox, chromium, kimi, all or versions)" >&2; exit 2 ;;
	esac
done
