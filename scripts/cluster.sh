#!/usr/bin/env bash
# cluster.sh starts, on this machine and without docker, the topology that
# docker-compose.yml ships for a team, each part a real server at the
# versions pinned in .env:
#
#   PostgreSQL   a throwaway data directory (initdb/pg_ctl of the local
#                PostgreSQL), or an existing server named by TETHER_PG_URL
#   Temporal     the server built from go.temporal.io/server, all services in
#                one process, deploy/temporal/config/tether.yaml, schemas
#                applied by deploy/temporal/setup-postgres.sh; mutual TLS on
#                the frontend (gRPC and HTTP API) and between its services,
#                with certificates issued for this cluster (internal/pki)
#   S3           versitygw on 127.0.0.1, bucket "tether"
#   workers      N tether-worker processes, each with its own empty HOME,
#                state and work roots
#
# Usage:
#   scripts/cluster.sh up [--workers N]     start what is not running (N=3)
#   scripts/cluster.sh down [--keep]        stop everything; --keep keeps data
#   scripts/cluster.sh status               what runs, where
#   scripts/cluster.sh env                  export lines for tether and temporal
#   scripts/cluster.sh worker start|stop|kill|wipe I
#                                           worker I: start, SIGTERM, SIGKILL,
#                                           empty its disks (HOME, state, work)
#   scripts/cluster.sh upgrade --bin PATH [--workers N] [--ramp PCT]
#                             [--ramp-for DURATION] [--drain-timeout DURATION]
#                                           a rolling upgrade to the tether-worker
#                                           at PATH: start N workers of its build,
#                                           ramp it, make it current, move the
#                                           waiting runs (tether upgrade-runs),
#                                           wait until the old builds are drained,
#                                           stop their workers
#   scripts/cluster.sh start|stop|restart postgres|temporal|s3
#
# State lives in TETHER_CLUSTER_DIR (default .tether/cluster); the
# certificates in its tls/ directory, one subdirectory per role, which no
# sandbox binds (docs/security.md). Ports start at TETHER_CLUSTER_PORT
# (default 7233: Temporal's frontend, its HTTP API +10; history +1,
# matching +2, worker +6, membership -300.., metrics +767), S3 on
# TETHER_CLUSTER_S3_PORT (7070), PostgreSQL on TETHER_CLUSTER_PG_PORT (55432).
# The workers run bin/tether-worker, or TETHER_CLUSTER_WORKER_BIN; each
# worker's binary (and so its build) is recorded in run/worker-I.bin, so a
# worker started again runs the build it ran.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
set -a; . "$root/.env"; set +a
dir=${TETHER_CLUSTER_DIR:-$root/.tether/cluster}
port=${TETHER_CLUSTER_PORT:-7233}
s3_port=${TETHER_CLUSTER_S3_PORT:-7070}
pg_port=${TETHER_CLUSTER_PG_PORT:-55432}
# Tether's search attributes (workflows.SearchAttributeTypes), NAME=TYPE.
tether_search_attributes="TetherGraph=Keyword TetherNode=Keyword TetherStatus=Keyword TetherBackends=KeywordList TetherThread=KeywordList"
bucket=tether

say() { echo "cluster: $*" >&2; }
die() { say "$*"; exit 1; }

# --- processes -------------------------------------------------------------

pidfile() { echo "$dir/run/$1.pid"; }
running() { local p; p=$(cat "$(pidfile "$1")" 2>/dev/null) && kill -0 "$p" 2>/dev/null; }
# spawn NAME CMD...: start CMD in its own session, logging to NAME.log.
spawn() {
	local name=$1
	shift
	mkdir -p "$dir/run" "$dir/log"
	setsid "$@" >>"$dir/log/$name.log" 2>&1 </dev/null &
	echo $! >"$(pidfile "$name")"
}
# halt NAME SIGNAL [SECONDS]: signal NAME's process group, wait for it to go.
halt() {
	local name=$1 sig=$2 wait=${3:-30} p
	p=$(cat "$(pidfile "$name")" 2>/dev/null) || return 0
	kill "-$sig" -- "-$p" 2>/dev/null || kill "-$sig" "$p" 2>/dev/null || true
	for _ in $(seq 1 $((wait * 10))); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$p" 2>/dev/null; then
		say "$name did not stop within ${wait}s of SIG$sig; killing it"
		kill -KILL -- "-$p" 2>/dev/null || true
	fi
	rm -f "$(pidfile "$name")"
}
# wait_for WHAT SECONDS CMD...: poll CMD until it succeeds.
wait_for() {
	local what=$1 secs=$2
	shift 2
	for _ in $(seq 1 $((secs * 5))); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	die "$what did not come up within ${secs}s; see $dir/log/"
}

# --- secrets and the environment of clients ---------------------------------

secrets() {
	mkdir -p "$dir"
	chmod 755 "$dir"
	if [ ! -f "$dir/secrets.env" ]; then
		umask 077
		{
			echo "TETHER_PG_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')"
			echo "AWS_ACCESS_KEY_ID=tether"
			echo "AWS_SECRET_ACCESS_KEY=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
			echo "TETHER_CHECKPOINT_KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
		} >"$dir/secrets.env"
		umask 022
	fi
	set -a; . "$dir/secrets.env"; set +a
	if [ -n "${TETHER_PG_URL:-}" ]; then
		[[ $TETHER_PG_URL =~ ^postgres(ql)?://([^:@/]+)(:([^@/]*))?@([^:/]+)(:([0-9]+))?(/.*)?$ ]] ||
			die "TETHER_PG_URL=postgres://USER:PASSWORD@HOST:PORT is what it reads (the password is never printed)"
		TETHER_PG_USER=${BASH_REMATCH[2]} TETHER_PG_PASSWORD=${BASH_REMATCH[4]}
		TETHER_PG_HOST=${BASH_REMATCH[5]} TETHER_PG_PORT=${BASH_REMATCH[7]:-5432}
	else
		TETHER_PG_USER=temporal TETHER_PG_HOST=127.0.0.1 TETHER_PG_PORT=$pg_port
	fi
	export TETHER_PG_USER TETHER_PG_PASSWORD TETHER_PG_HOST TETHER_PG_PORT
}

# certs issues the cluster's certificates, or renews those about to
# expire (internal/pki).
certs() {
	mkdir -p "$dir/log"
	(cd "$root" && go run ./internal/pki/cmd/certs -dir "$dir/tls" -hosts 127.0.0.1,localhost,::1) >>"$dir/log/certs.log" 2>&1 ||
		die "issuing the cluster's certificates failed; see $dir/log/certs.log"
}

# tls_env ROLE: the client certificate of ROLE (cli, worker) under the
# names tether reads and under the Temporal CLI's.
tls_env() {
	local d=$dir/tls/$1
	cat <<EOF
export TEMPORAL_TLS_CERT='$d/cert.pem' TEMPORAL_TLS_CLIENT_CERT_PATH='$d/cert.pem'
export TEMPORAL_TLS_KEY='$d/key.pem' TEMPORAL_TLS_CLIENT_KEY_PATH='$d/key.pem'
export TEMPORAL_TLS_CA='$d/ca.pem' TEMPORAL_TLS_SERVER_CA_CERT_PATH='$d/ca.pem'
EOF
}

client_env() {
	tls_env cli
	cat <<EOF
export TEMPORAL_ADDRESS=127.0.0.1:$port
export TEMPORAL_NAMESPACE=default
export TETHER_BLOB_URL='s3://$bucket/cluster?endpoint=http://127.0.0.1:$s3_port&region=us-east-1&path_style=true'
export AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID
export AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
export AWS_REGION=us-east-1
export TETHER_CHECKPOINT_KEY=$TETHER_CHECKPOINT_KEY
EOF
}

# --- PostgreSQL ------------------------------------------------------------

as_postgres() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
pg_bin() {
	local b
	b=$(command -v "$1" 2>/dev/null) || b=$(ls /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -1)
	[ -n "$b" ] || die "$1 not found: install PostgreSQL $POSTGRESQL_VERSION (apt-get install postgresql) or point TETHER_PG_URL at a server"
	echo "$b"
}
pg_ready() { "$(pg_bin pg_isready)" -q -h "$TETHER_PG_HOST" -p "$TETHER_PG_PORT"; }

start_postgres() {
	if [ -n "${TETHER_PG_URL:-}" ]; then
		wait_for "PostgreSQL at $TETHER_PG_HOST:$TETHER_PG_PORT (TETHER_PG_URL)" 30 pg_ready
		return
	fi
	pg_ready && return 0
	local data
	data=$(pg_data)
	if [ ! -f "$data/PG_VERSION" ]; then
		local v
		v=$("$(pg_bin initdb)" --version | grep -o '[0-9]\+' | head -1)
		[ "$v" = "$POSTGRESQL_VERSION" ] || say "warning: local PostgreSQL is $v, .env pins $POSTGRESQL_VERSION"
		local pg=${data%/data}
		mkdir -p "$pg"
		chmod 755 "$pg"
		local pw=$pg/pw
		(umask 077; printf '%s\n' "$TETHER_PG_PASSWORD" >"$pw")
		[ "$(id -u)" != 0 ] || chown -R postgres "$pg"
		as_postgres "$(pg_bin initdb)" -D "$data" -U temporal --pwfile="$pw" --auth=scram-sha-256 \
			-E UTF8 >"$dir/log/initdb.log" 2>&1 || die "initdb failed; see $dir/log/initdb.log"
		rm -f "$pw"
	fi
	as_postgres "$(pg_bin pg_ctl)" -D "$data" -l "${data%/data}/postgres.log" -w -t 60 \
		-o "-h 127.0.0.1 -p $TETHER_PG_PORT -k $data -c max_connections=200" start >/dev/null ||
		die "PostgreSQL did not start; see ${data%/data}/postgres.log"
	say "postgres up on 127.0.0.1:$TETHER_PG_PORT ($data)"
}
# pg_data is the data directory: under the cluster directory, unless the
# postgres user (initdb and postgres refuse to run as root) cannot reach it
# there, as under root's 0700 home; then in a directory of its own in /tmp,
# recorded so that stop and down find it.
pg_data() {
	if [ -f "$dir/postgres.path" ]; then
		cat "$dir/postgres.path"
	elif [ "$(id -u)" != 0 ] || runuser -u postgres -- test -x "$dir" 2>/dev/null; then
		echo "$dir/postgres/data"
	else
		local p
		p=$(mktemp -d /tmp/tether-cluster-pg.XXXXXX)
		chown postgres "$p"
		echo "$p/data" | tee "$dir/postgres.path"
	fi
}
stop_postgres() {
	[ -z "${TETHER_PG_URL:-}" ] || return 0
	local data
	data=$(pg_data)
	[ -f "$data/postmaster.pid" ] || return 0
	as_postgres "$(pg_bin pg_ctl)" -D "$data" -m fast -w -t 60 stop >/dev/null 2>&1 || true
}

# --- Temporal --------------------------------------------------------------

temporal_cli() {
	local d=$dir/tls/cli
	"$root/bin/temporal" --address "127.0.0.1:$port" \
		--tls-cert-path "$d/cert.pem" --tls-key-path "$d/key.pem" --tls-ca-path "$d/ca.pem" "$@"
}
# search_attributes registers Tether's search attributes before any worker
# starts. The server keeps them in a cache it reads again every minute
# (this topology does not force a database read on every use, which cost
# each visit about eight: docs/operations.md), so one added now is
# usable everywhere a minute later: wait that minute, once per database.
search_attributes() {
	local have sa missing=()
	have=$(temporal_cli operator search-attribute list --namespace default) || die "list the search attributes"
	for sa in $tether_search_attributes; do
		grep -q "^ *${sa%%=*} " <<<"$have" || missing+=(--name "${sa%%=*}" --type "${sa#*=}")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	temporal_cli operator search-attribute create --namespace default "${missing[@]}" >/dev/null ||
		die "register Tether's search attributes"
	say "search attributes registered; waiting 65 s for the server's caches to read them"
	sleep 65
}
start_temporal() {
	if running temporal; then return 0; fi
	local server
	server=$(bash "$root/scripts/tools.sh" temporal-server)
	bash "$root/scripts/tools.sh" temporal >/dev/null
	local mod
	mod=$(cd "$root" && go mod download -json "go.temporal.io/server@v$TEMPORAL_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$mod/schema" ] || die "the schemas of go.temporal.io/server v$TEMPORAL_VERSION are not in the module cache (go mod download failed)"
	SQL_TOOL="$root/bin/temporal-server-sql" SCHEMA_DIR="$mod/schema/postgresql/v12" \
		sh "$root/deploy/temporal/setup-postgres.sh" >>"$dir/log/schema.log" 2>&1 ||
		die "schema setup failed; see $dir/log/schema.log"
	[ -f "$dir/tls/server/frontend.pem" ] || certs
	TETHER_TEMPORAL_PORT=$port TETHER_TEMPORAL_DYNAMIC_CONFIG="$root/deploy/temporal/config/dynamicconfig/tether.yaml" \
		TETHER_TEMPORAL_TLS_DIR="$dir/tls/server" spawn temporal "$server" --root "$root/deploy/temporal" --config config --env tether --allow-no-auth start
	wait_for "Temporal at 127.0.0.1:$port" 90 temporal_cli operator cluster health
	if ! temporal_cli operator namespace describe --namespace default >/dev/null 2>&1; then
		wait_for "namespace default" 60 temporal_cli operator namespace create --namespace default --retention 72h
	fi
	# A new namespace is "not found" by the frontend until its namespace
	# cache refreshes; workers that start before then cannot register
	# Tether's search attributes in it.
	wait_for "namespace default to be served" 60 temporal_cli operator search-attribute list --namespace default
	search_attributes
	say "temporal up on 127.0.0.1:$port (server v$TEMPORAL_VERSION on PostgreSQL, mutual TLS)"
}

# --- S3 --------------------------------------------------------------------

s3_ready() { (exec 3<>"/dev/tcp/127.0.0.1/$s3_port") 2>/dev/null; }
start_s3() {
	if running s3; then return 0; fi
	local gw
	gw=$(bash "$root/scripts/tools.sh" versitygw)
	# The POSIX backend keeps a bucket as a directory of its root.
	mkdir -p "$dir/s3/$bucket"
	ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
		spawn s3 "$gw" --port "127.0.0.1:$s3_port" --quiet posix "$dir/s3"
	wait_for "S3 at 127.0.0.1:$s3_port" 30 s3_ready
	say "s3 up on 127.0.0.1:$s3_port (bucket $bucket)"
}

# --- workers ---------------------------------------------------------------

# worker_start I [BIN]: start worker I, running BIN, else the binary it ran
# last, else the default.
worker_start() {
	local i=$1 w=$dir/workers/w$1
	if running "worker-$i"; then return 0; fi
	mkdir -p "$w/home" "$w/state" "$w/work" "$dir/run"
	local bin=${2:-}
	[ -n "$bin" ] || bin=$(cat "$dir/run/worker-$i.bin" 2>/dev/null) || true
	[ -n "$bin" ] || bin=${TETHER_CLUSTER_WORKER_BIN:-$root/bin/tether-worker}
	[ -x "$bin" ] || [ "$bin" != "$root/bin/tether-worker" ] || (cd "$root" && make -s build)
	[ -x "$bin" ] || die "worker $i: $bin is not an executable tether-worker"
	echo "$bin" >"$dir/run/worker-$i.bin"
	(
		eval "$(client_env)"
		eval "$(tls_env worker)"
		export HOME="$w/home" TETHER_HOME="$w/home/.tether" TETHER_STATE_DIR="$w/state" TETHER_WORK_DIR="$w/work" \
			TETHER_WORKER_ID="cluster-w$i"
		# Temporal's other services and PostgreSQL, which no agent or tool
		# may reach (the worker adds the frontend, its HTTP API and S3).
		export TETHER_SANDBOX_DENY="temporal-history=127.0.0.1:$((port + 1)),temporal-matching=127.0.0.1:$((port + 2)),temporal-worker=127.0.0.1:$((port + 6)),temporal-metrics=127.0.0.1:$((port + 767)),temporal-membership=127.0.0.1:$((port - 300)),temporal-membership=127.0.0.1:$((port - 299)),temporal-membership=127.0.0.1:$((port - 298)),temporal-membership=127.0.0.1:$((port - 294)),postgresql=$TETHER_PG_HOST:$TETHER_PG_PORT"
		spawn "worker-$i" "$bin"
	)
	say "worker $i up (cluster-w$i, build $(build_of "$bin"), roots in $w)"
}
# build_of BIN: the build id tether-worker BIN registers with.
build_of() { "$1" --version | sed -n 's/.*(build id \([^,)]*\)[,)].*/\1/p'; }
# workers: the indices of the workers started, running or not.
workers() {
	local f
	for f in "$dir"/run/worker-*.bin; do
		[ -e "$f" ] || continue
		f=${f##*/worker-}
		echo "${f%.bin}"
	done | sort -n
}
worker_wipe() {
	local w=$dir/workers/w$1
	running "worker-$1" && die "worker $1 is running; stop or kill it first"
	rm -rf "$w"
}

# --- commands --------------------------------------------------------------

up() {
	local workers=3
	while [ $# -gt 0 ]; do
		case $1 in
		--workers) workers=$2; shift 2 ;;
		--workers=*) workers=${1#*=}; shift ;;
		*) die "up: unknown flag $1 (want --workers N)" ;;
		esac
	done
	secrets
	mkdir -p "$dir/log"
	chmod 755 "$dir"
	certs
	start_postgres
	start_s3
	start_temporal
	for i in $(seq 1 "$workers"); do worker_start "$i"; done
	client_env >"$dir/client.env"
	chmod 600 "$dir/client.env"
	say "up: $workers workers; for tether and temporal: . <(scripts/cluster.sh env)"
}

down() {
	local f
	for f in "$dir"/run/worker-*.pid; do
		[ -e "$f" ] || continue
		f=$(basename "$f" .pid)
		halt "$f" TERM 40
	done
	halt temporal TERM 30
	halt s3 TERM 10
	secrets
	stop_postgres
	if [ "${1:-}" != "--keep" ]; then
		[ ! -f "$dir/postgres.path" ] || rm -rf "$(dirname "$(cat "$dir/postgres.path")")"
		rm -rf "$dir"
		say "down: stopped and removed $dir"
	else
		say "down: stopped; data kept in $dir"
	fi
}

# tether: the tether CLI as a client of this cluster.
tether_cli() { (eval "$(client_env)" && TETHER_HOME="$dir/cli" "$root/bin/tether" "$@"); }

# retry N CMD...: run CMD until it succeeds, at most N times, 2 s apart;
# its output is shown only when the last try fails.
retry() {
	local n=$1 out
	shift
	for _ in $(seq 1 "$n"); do
		out=$("$@" 2>&1) && return 0
		sleep 2
	done
	echo "$out" >&2
	return 1
}

# registered BUILD: whether BUILD's workers registered Tether's task queue
# for both workflow and activity tasks.
registered() {
	local v
	v=$(temporal_cli worker deployment describe-version --deployment-name tether --build-id "$1" -o json 2>/dev/null | tr -d ' \n') || return 1
	case $v in *'{"name":"tether","type":"workflow"}'*) ;; *) return 1 ;; esac
	case $v in *'{"name":"tether","type":"activity"}'*) ;; *) return 1 ;; esac
}

# upgrade: a rolling upgrade to the build of --bin, on Temporal's worker
# deployment versioning (docs/operations.md, "Upgrades").
upgrade() {
	local bin="" n="" ramp=25 ramp_for=10s drain_timeout=30m
	while [ $# -gt 0 ]; do
		case $1 in
		--bin) bin=$2; shift 2 ;;
		--workers) n=$2; shift 2 ;;
		--ramp) ramp=$2; shift 2 ;;
		--ramp-for) ramp_for=$2; shift 2 ;;
		--drain-timeout) drain_timeout=$2; shift 2 ;;
		*) die "upgrade: unknown flag $1 (want --bin PATH [--workers N] [--ramp PCT] [--ramp-for DURATION] [--drain-timeout DURATION])" ;;
		esac
	done
	[ -n "$bin" ] && [ -x "$bin" ] || die "upgrade: --bin must name the new tether-worker binary"
	bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
	[ -x "$root/bin/tether" ] || (cd "$root" && make -s build)
	local new old_workers=() old_builds=() i b last=0
	new=$(build_of "$bin")
	[ -n "$new" ] || die "upgrade: $bin --version names no build id"
	for i in $(workers); do
		last=$i
		running "worker-$i" || continue
		b=$(build_of "$(cat "$dir/run/worker-$i.bin")")
		[ "$b" = "$new" ] && continue
		old_workers+=("$i")
		case " ${old_builds[*]} " in *" $b "*) ;; *) old_builds+=("$b") ;; esac
	done
	[ ${#old_workers[@]} -gt 0 ] || die "upgrade: no running worker of another build than $new"
	n=${n:-${#old_workers[@]}}
	local began=$SECONDS
	say "upgrade: builds ${old_builds[*]} -> $new: starting $n workers of $new"
	for i in $(seq $((last + 1)) $((last + n))); do worker_start "$i" "$bin"; done
	# Ramped or current, the new build takes Tether's queue's workflow and
	# activity tasks: wait until its workers have registered both.
	wait_for "build $new to register Tether's queue with deployment tether" 60 registered "$new"
	say "upgrade: ramping $new to $ramp% of new runs for $ramp_for"
	# The deployment's own workflow answers these; on a busy server it can
	# miss a call ("Worker Deployment not found"), so each is tried again.
	retry 5 temporal_cli worker deployment set-ramping-version --deployment-name tether --build-id "$new" --percentage "$ramp" --ignore-missing-task-queues --yes ||
		die "upgrade: could not ramp build $new"
	sleep "$ramp_for"
	retry 5 temporal_cli worker deployment set-current-version --deployment-name tether --build-id "$new" --ignore-missing-task-queues --yes ||
		die "upgrade: could not make build $new current"
	say "upgrade: $new is current; moving the runs of ${old_builds[*]}"
	tether_cli upgrade-runs --wait "$drain_timeout" >&2 || say "upgrade: some runs have not moved yet (see above); waiting for the drain"
	for b in "${old_builds[@]}"; do
		tether_cli workers --wait-drained "$b" --timeout "$drain_timeout" >&2 ||
			die "upgrade: build $b is not drained; its workers keep running (scripts/cluster.sh upgrade again, or tether workers)"
	done
	for i in "${old_workers[@]}"; do halt "worker-$i" TERM 60; done
	say "upgrade: done in $((SECONDS - began))s: build $new serves every run; workers ${old_workers[*]} of ${old_builds[*]} stopped"
}

status() {
	[ -d "$dir" ] || { echo "cluster: not set up ($dir)"; return 1; }
	secrets
	local ok=0 s
	if pg_ready; then s=up; else s=down ok=1; fi
	echo "postgres  $s  $TETHER_PG_HOST:$TETHER_PG_PORT"
	if running temporal && temporal_cli operator cluster health >/dev/null 2>&1; then s=up; else s=down ok=1; fi
	echo "temporal  $s  127.0.0.1:$port"
	if running s3 && s3_ready; then s=up; else s=down ok=1; fi
	echo "s3        $s  http://127.0.0.1:$s3_port/$bucket"
	local i
	for i in $(workers); do
		if running "worker-$i"; then s="up  pid $(cat "$(pidfile "worker-$i")")"; else s=down; fi
		echo "worker-$i  $s  build $(build_of "$(cat "$dir/run/worker-$i.bin")")"
	done
	return $ok
}

cmd=${1:-}
[ $# -eq 0 ] || shift
case $cmd in
up) up "$@" ;;
upgrade) secrets; upgrade "$@" ;;
down) down "$@" ;;
status) status ;;
env) secrets; client_env ;;
worker)
	[ $# -eq 2 ] || die "worker start|stop|kill|wipe I"
	secrets
	case $1 in
	start) worker_start "$2" ;;
	stop) halt "worker-$2" TERM 60 ;;
	kill) halt "worker-$2" KILL 10 ;;
	wipe) worker_wipe "$2" ;;
	*) die "worker start|stop|kill|wipe I" ;;
	esac
	;;
start | stop | restart)
	[ $# -eq 1 ] || die "$cmd postgres|temporal|s3"
	secrets
	case $cmd:$1 in
	start:postgres) start_postgres ;;
	stop:postgres) stop_postgres ;;
	start:temporal) start_temporal ;;
	stop:temporal) halt temporal TERM 30 ;;
	start:s3) start_s3 ;;
	stop:s3) halt s3 TERM 10 ;;
	restart:postgres) stop_postgres; start_postgres ;;
	restart:temporal) halt temporal TERM 30; start_temporal ;;
	restart:s3) halt s3 TERM 10; start_s3 ;;
	*) die "$cmd postgres|temporal|s3" ;;
	esac
	;;
*) sed -n '2,43p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
