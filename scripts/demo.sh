#!/usr/bin/env bash
# demo.sh is `make run`: it starts a dev server, a worker and the console,
# runs a graph with --follow, answers its human approval through `tether
# answer`, prints the path taken, the Web UI address and the run's page on
# the console, and stops only what it started (DEMO_KEEP=1 keeps them up
# until Ctrl-C, to look around the console).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
graph=${1:-examples/review-loop.yaml}
export TETHER_HOME=${TETHER_HOME:-$root/.tether}
mkdir -p "$TETHER_HOME"
tether="$root/bin/tether"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

if "$root/bin/temporal" operator cluster health --address "${TEMPORAL_ADDRESS:-127.0.0.1:7233}" >/dev/null 2>&1; then
	echo "demo: using the Temporal server already on ${TEMPORAL_ADDRESS:-127.0.0.1:7233}"
else
	echo "demo: starting the Temporal dev server (state in $TETHER_HOME/temporal.db, Web UI http://127.0.0.1:8233)"
	pids+=("$(bash "$root/scripts/devserver.sh")")
fi
console_addr=${TETHER_CONSOLE_ADDR:-127.0.0.1:8080}
# The worker refuses every port of the dev server (devserver.sh names them
# in temporal.env) and the console to the agents and tools it confines.
deny="tether-console=$console_addr"
if [ -f "$TETHER_HOME/temporal.env" ]; then
	servers=$(sed -n 's/^TETHER_SANDBOX_DENY=//p' "$TETHER_HOME/temporal.env")
	deny="$deny${servers:+,$servers}"
fi
export TETHER_SANDBOX_DENY="${TETHER_SANDBOX_DENY:+$TETHER_SANDBOX_DENY,}$deny"
echo "demo: starting tether-worker (log in $TETHER_HOME/worker.log)"
"$root/bin/tether-worker" >"$TETHER_HOME/worker.log" 2>&1 &
pids+=("$!")

echo "demo: starting tether console (log in $TETHER_HOME/console.log)"
"$tether" console --addr "$console_addr" >"$TETHER_HOME/console.log" 2>&1 &
pids+=("$!")
console=""
for _ in $(seq 1 50); do
	console=$(sed -n 's/^console: \(http:[^ ]*\) .*/\1/p' "$TETHER_HOME/console.log")
	[ -n "$console" ] && break
	kill -0 "${pids[-1]}" 2>/dev/null || break
	sleep 0.2
done
if [ -n "$console" ]; then
	echo "demo: console $console"
else
	echo "demo: the console did not start (is $console_addr taken? set TETHER_CONSOLE_ADDR); see $TETHER_HOME/console.log"
fi

run="demo-$(date +%Y%m%d-%H%M%S)"
[ -z "$console" ] || echo "demo: watch the run at ${console}runs/$run"
"$tether" run "$graph" --id "$run" --follow &
follower=$!

# Answer each human question as it appears, the way a person would.
answered=""
while kill -0 "$follower" 2>/dev/null; do
	for q in $("$tether" status "$run" --pending 2>/dev/null); do
		case " $answered " in *" $q "*) continue ;; esac
		sleep 1
		echo "demo: answering $q with \"yes, publish\""
		"$tether" answer "$run" "$q" "yes, publish"
		answered="$answered $q"
	done
	sleep 0.5
done
wait "$follower"
echo
echo "demo: the path on the graph:"
"$tether" graph "$graph" --run "$run" --format mermaid
if [ -n "$console" ]; then
	echo
	echo "demo: the run on the console: ${console}runs/$run"
	if [ "${DEMO_KEEP:-}" = 1 ]; then
		echo "demo: the dev server, worker and console stay up until Ctrl-C"
		wait
	fi
fi
