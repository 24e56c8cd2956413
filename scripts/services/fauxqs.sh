#!/usr/bin/env bash
# fauxqs (an SQS-protocol server) for the tests of internal/sqsq and
# internal/timers.
#
#   scripts/services/fauxqs.sh start   install what is missing, start, wait until ready
#   scripts/services/fauxqs.sh stop    stop the server this script started
#   scripts/services/fauxqs.sh env     print the variables tests read
#
# fauxqs 1.9.2 is pinned in the repository's package.json (2.x needs
# Node >= 22 and crashes on Node 20). Its own CLI listens on all interfaces,
# so fauxqs-server.mjs beside this script starts the same server through the
# package's buildApp export on 127.0.0.1:14566. State (pid file, log) lives
# in .run/fauxqs/; queues live in memory. start and stop are idempotent.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/scripts/services"
PORT=14566
RUN="$ROOT/.run/fauxqs"
PIDFILE="$RUN/pid"
LOG="$RUN/server.log"
ENDPOINT="http://127.0.0.1:$PORT"

die() { echo "fauxqs.sh: $*" >&2; exit 1; }
DAEMON="fauxqs"
MARKER=fauxqs-server.mjs
# shellcheck source=../lib/daemon.sh
source "$ROOT/scripts/lib/daemon.sh"

# answering: something on the port answers an SQS ListQueues call.
answering() {
	curl -s -m 2 -X POST "$ENDPOINT/" \
		-H 'Content-Type: application/x-amz-json-1.0' \
		-H 'X-Amz-Target: AmazonSQS.ListQueues' \
		-d '{}' 2>/dev/null | grep -q '^{'
}

install() {
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		echo "fauxqs.sh: installing Node.js and npm" >&2
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
	fi
	local major
	major=$(node -p 'process.versions.node.split(".")[0]')
	((major >= 20)) || die "fauxqs needs Node.js >= 20, found $(node --version)"
	if [[ ! -f $ROOT/node_modules/fauxqs/package.json ]]; then
		mkdir -p "$ROOT/.run"
		(flock 9 && cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error >&2) 9>"$ROOT/.run/npm.lock"
	fi
}

start() {
	if ours && answering; then
		return 0
	fi
	if answering; then
		echo "fauxqs.sh: an SQS server not started by this script already answers on $ENDPOINT; using it" >&2
		return 0
	fi
	install
	mkdir -p "$RUN"
	if ours; then
		stop
	fi
	FAUXQS_PORT=$PORT setsid node "$HERE/fauxqs-server.mjs" >"$LOG" 2>&1 </dev/null &
	echo $! >"$PIDFILE"
	daemon_wait 20
}

stop() { daemon_stop; }

case "${1:-}" in
start) start ;;
stop) stop ;;
env) echo "export AGENTSLICE_TEST_SQS_ENDPOINT=$ENDPOINT" ;;
*) die "usage: $0 {start|stop|env}" ;;
esac
