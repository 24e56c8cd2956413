#!/usr/bin/env bash
# PostgreSQL 15 for tests: the local stand-in for Aurora DSQL.
#
#   scripts/services/postgres.sh start   install if missing, init, start, wait until ready (idempotent)
#   scripts/services/postgres.sh stop    stop the server (idempotent)
#   scripts/services/postgres.sh env     print the export line tests read
#
# The server listens on 127.0.0.1:54329 only, keeps its state under .run/postgres
# (owned by the postgres user: initdb refuses to run as root), runs with
# fsync=off (test data only), and has a database and a login role both named
# agentslice with trust authentication from 127.0.0.1 and the local socket.
set -euo pipefail

PORT=54329
DB=agentslice
ROLE=agentslice
PGBIN=/usr/lib/postgresql/15/bin
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN="$ROOT/.run/postgres"
DATA="$RUN/data"
SOCK="$RUN/sock"
LOG="$RUN/server.log"

as_pg() { runuser -u postgres -- "$@"; }

install() {
	if [[ -x "$PGBIN/postgres" ]]; then
		return
	fi
	echo "postgres.sh: installing postgresql-15" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends postgresql-15 >&2
	# The Debian package starts a cluster of its own on 5432; we do not use it.
	if command -v pg_ctlcluster >/dev/null 2>&1; then
		pg_ctlcluster 15 main stop >/dev/null 2>&1 || true
	fi
}

running() {
	[[ -f "$DATA/PG_VERSION" ]] && as_pg "$PGBIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

psql_admin() {
	as_pg "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -d postgres "$@"
}

start() {
	install
	mkdir -p "$RUN"
	chown postgres:postgres "$RUN"
	chmod 700 "$RUN"
	if ! as_pg test -w "$RUN"; then
		echo "postgres.sh: the postgres user cannot write $RUN (a parent directory is not traversable?)" >&2
		exit 1
	fi
	if running; then
		echo "postgres.sh: already running on 127.0.0.1:$PORT" >&2
		return
	fi
	if [[ ! -f "$DATA/PG_VERSION" ]]; then
		as_pg "$PGBIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$RUN/initdb.log" 2>&1 || {
			cat "$RUN/initdb.log" >&2
			exit 1
		}
		as_pg mkdir -p "$SOCK"
		as_pg tee "$DATA/pg_hba.conf" >/dev/null <<-HBA
			# written by scripts/services/postgres.sh: trust on the loopback only
			local all all trust
			host  all all 127.0.0.1/32 trust
		HBA
	fi
	# -w waits until the server accepts connections; -t bounds the wait.
	as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start -o \
		"-c listen_addresses=127.0.0.1 -p $PORT -c unix_socket_directories=$SOCK -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" >/dev/null || {
		echo "postgres.sh: server did not start; last log lines:" >&2
		tail -n 20 "$LOG" >&2 || true
		exit 1
	}
	for _ in $(seq 1 50); do
		if as_pg "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
			break
		fi
		sleep 0.2
	done
	as_pg "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" || { echo "postgres.sh: not ready" >&2; exit 1; }
	if [[ -z "$(psql_admin -tAc "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" ]]; then
		psql_admin -c "CREATE ROLE $ROLE LOGIN CREATEROLE"
	fi
	# CREATEROLE: internal/dsql's tests create the least-privilege app role
	# (dsql.GrantAppRole) as `agentslice migrate` does on DSQL.
	psql_admin -c "ALTER ROLE $ROLE CREATEROLE" >/dev/null
	if [[ -z "$(psql_admin -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" ]]; then
		psql_admin -c "CREATE DATABASE $DB OWNER $ROLE"
	fi
	echo "postgres.sh: ready on 127.0.0.1:$PORT (database $DB, role $ROLE)" >&2
}

stop() {
	if running; then
		as_pg "$PGBIN/pg_ctl" -D "$DATA" -w -t 60 -m fast stop >/dev/null
		echo "postgres.sh: stopped" >&2
	fi
}

env_() {
	echo "export AGENTSLICE_TEST_PG_DSN=postgres://$ROLE@127.0.0.1:$PORT/$DB?sslmode=disable"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env) env_ ;;
*)
	echo "usage: $0 {start|stop|env}" >&2
	exit 2
	;;
esac
