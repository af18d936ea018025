#!/bin/sh
# setup-postgres.sh creates (or brings up to date) Temporal's two databases
# on PostgreSQL 12+: "temporal" (persistence) and "temporal_visibility" (SQL
# visibility, where search attributes such as TetherStatus live). It is
# idempotent: run it on every start, and after a server upgrade it applies
# the new schema versions.
#
# docker-compose.yml runs it in the temporalio/admin-tools image; scripts/
# cluster.sh runs it with the schema tool and schemas of the pinned server
# module. Environment:
#   SQL_TOOL         the schema tool (default temporal-sql-tool)
#   SCHEMA_DIR       the server's schema/postgresql/v12 directory
#                    (default /etc/temporal/schema/postgresql/v12)
#   TETHER_PG_HOST, TETHER_PG_PORT, TETHER_PG_USER, TETHER_PG_PASSWORD
set -eu
tool=${SQL_TOOL:-temporal-sql-tool}
schema=${SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}
export SQL_PASSWORD="${TETHER_PG_PASSWORD:-temporal}"
sql() {
	"$tool" --plugin postgres12 --ep "${TETHER_PG_HOST:-postgresql}" -p "${TETHER_PG_PORT:-5432}" \
		-u "${TETHER_PG_USER:-temporal}" "$@"
}
for db in temporal:temporal temporal_visibility:visibility; do
	name=${db%%:*} dir=$schema/${db#*:}/versioned
	# create fails on an existing database, and setup-schema on an existing
	# schema: both are the expected outcome of a second run.
	sql --db "$name" create >/dev/null 2>&1 || true
	sql --db "$name" setup-schema -v 0.0 >/dev/null 2>&1 || true
	sql --db "$name" update-schema -d "$dir"
done
echo "setup-postgres: databases temporal and temporal_visibility are at the schema of $schema"
