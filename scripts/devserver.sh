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
# It prints the server's pid once the frontend answers. TEMPORAL_PORT,
# TEMPORAL_UI_PORT and TEMPORAL_METRICS_PORT (Prometheus; default: none
# asked for) move its ports, TETHER_HOME its state.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
home=${TETHER_HOME:-$root/.tether}
port=${TEMPORAL_PORT:-7233}
ui_port=${TEMPORAL_UI_PORT:-8233}
mkdir -p "$home"
temporal=$(bash "$root/scripts/tools.sh" temporal)
"$temporal" server start-dev \
	--ip 127.0.0.1 --port "$port" --ui-port "$ui_port" \
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
	--search-attribute TetherGraph=Keyword \
	--search-attribute TetherNode=Keyword \
	--search-attribute TetherStatus=Keyword \
	--search-attribute TetherBackends=KeywordList \
	--search-attribute TetherThread=KeywordList \
	>"$home/temporal.log" 2>&1 &
pid=$!
for _ in $(seq 1 150); do
	if "$temporal" operator cluster health --address "127.0.0.1:$port" >/dev/null 2>&1; then
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
