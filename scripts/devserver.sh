#!/usr/bin/env bash
# devserver.sh starts the Temporal CLI's dev server the way Tether wants it:
# state in a SQLite file under .tether/ (durable across restarts), Web UI on
# :8233, and the dynamic-config settings that take a regular activity's
# round trip from ~100 ms (a poll-rate limit, not work) to ~30 ms.
# The SQLite file is written ahead (journal_mode=wal) and synced at its
# checkpoints, not at every commit (synchronous=normal): the server's one
# connection serves every request in turn, and three syncs per write were
# its ceiling. A crash of the server or a restart loses nothing; a crash
# of the machine itself (power, kernel) can take back its last writes
# (docs/operations.md, "The embedded default's ceiling"). The search
# attributes are registered here, at the start, so the server need not
# read them from its database again on every use (the dev server's
# default, for tests that register them later).
# Its HTTP API is on the frontend's port + 10, where a worker expects it.
# Once the frontend answers it writes $TETHER_HOME/temporal.env, which
# names every port the server listens on (its internal services and
# metrics are on ports it picks, or TEMPORAL_METRICS_PORT for Prometheus)
# in TETHER_SANDBOX_DENY, so that a worker given it refuses them all to
# the agents and tools it confines (scripts/demo.sh does), and prints the
# server's pid. TEMPORAL_PORT and TEMPORAL_UI_PORT move its ports,
# TETHER_HOME its state.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
home=${TETHER_HOME:-$root/.tether}
port=${TEMPORAL_PORT:-7233}
ui_port=${TEMPORAL_UI_PORT:-8233}
http_port=$((port + 10))
mkdir -p "$home"
temporal=$(bash "$root/scripts/tools.sh" temporal)
"$temporal" server start-dev \
	--ip 127.0.0.1 --port "$port" --http-port "$http_port" --ui-port "$ui_port" \
	--db-filename "$home/temporal.db" \
	--log-level warn \
	${TEMPORAL_METRICS_PORT:+--metrics-port "$TEMPORAL_METRICS_PORT"} \
	--sqlite-pragma journal_mode=wal \
	--sqlite-pragma synchronous=normal \
	--dynamic-config-value system.forceSearchAttributesCacheRefreshOnRead=false \
	--dynamic-config-value matching.numTaskqueueReadPartitions=1 \
	--dynamic-config-value matching.numTaskqueueWritePartitions=1 \
	--dynamic-config-value history.transferProcessorMaxPollRPS=10000 \
	--dynamic-config-value system.enableActivityEagerExecution=true \
	--dynamic-config-value history.timerProcessorMaxTimeShift='"100ms"' \
	--dynamic-config-value matching.wv.VersionDrainageStatusRefreshInterval='"2s"' \
	--dynamic-config-value matching.wv.VersionDrainageStatusVisibilityGracePeriod='"5s"' \
	--search-attribute TetherGraph=Keyword \
	--search-attribute TetherNode=Keyword \
	--search-attribute TetherStatus=Keyword \
	--search-attribute TetherBackends=KeywordList \
	--search-attribute TetherThread=KeywordList \
	>"$home/temporal.log" 2>&1 &
pid=$!

# listening PID: the TCP ports process PID listens on, one a line.
listening() {
	local inodes
	inodes=$(for f in /proc/"$1"/fd/*; do readlink "$f" 2>/dev/null; done | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p' | sort -u | tr '\n' ' ')
	[ -n "$inodes" ] || return 0
	local hex
	for hex in $(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v inodes=" $inodes" '
		$4 == "0A" && index(inodes, " " $10 " ") { split($2, a, ":"); print a[2] }'); do
		echo $((16#$hex))
	done | sort -un
}

# deny: write $home/temporal.env once the HTTP API and the Web UI listen.
deny() {
	local ports=""
	for _ in $(seq 1 50); do
		ports=$(listening "$pid")
		if grep -qx "$http_port" <<<"$ports" && grep -qx "$ui_port" <<<"$ports"; then
			break
		fi
		sleep 0.2
	done
	local list=""
	for p in $ports; do
		list="${list:+$list,}temporal-dev-server=127.0.0.1:$p"
	done
	echo "TETHER_SANDBOX_DENY=$list" >"$home/temporal.env.tmp"
	mv "$home/temporal.env.tmp" "$home/temporal.env"
}

for _ in $(seq 1 150); do
	# Our server's frontend, not another one already on the port.
	if grep -qx "$port" <<<"$(listening "$pid")" &&
		"$temporal" operator cluster health --address "127.0.0.1:$port" >/dev/null 2>&1; then
		deny
		echo "$pid"
		exit 0
	fi
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "devserver: temporal exited; see $home/temporal.log" >&2
		tail -20 "$home/temporal.log" >&2
		exit 1
	fi
	sleep 0.2
done
echo "devserver: temporal did not answer on 127.0.0.1:$port within 30s; see $home/temporal.log" >&2
kill "$pid" 2>/dev/null || true
exit 1
